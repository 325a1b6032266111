import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Writes the Java form of the error table, proto/reasons.txt, into the package {@code
 * io.github.handlestore.client.errors} under an output directory: the {@code Reason} enum (wire
 * name, gRPC code, whether the client retries), an exception class per gRPC code of the table
 * ({@code UnavailableException}) and per reason not named after its code ({@code NotLeaderException
 * extends UnavailableException}; a reason named after its code, such as {@code not_found}, is its
 * code's class), and {@code ErrorTable}, which picks the class of a status. It also writes the wire
 * constants of proto/wire.txt as the class {@code Wire} of {@code
 * io.github.handlestore.client.internal} ({@link WireTable}), in this one file because the JDK's
 * source launcher runs one file.
 *
 * <p>The build runs it before compiling (the {@code gen-reasons} execution in client/pom.xml, with
 * the JDK's source launcher), so the classes always follow the tables and none is committed:
 *
 * <pre>
 * java src/build/java/GenReasons.java ../../../proto/reasons.txt ../../../proto/wire.txt \
 *     target/generated-sources/reasons
 * </pre>
 */
public final class GenReasons {
  private static final String PACKAGE = "io.github.handlestore.client.errors";
  private static final Set<String> RETRIES = Set.of("yes", "no", "resume");

  /** One line of the table: reason | gRPC code | retried | when. */
  record Row(String reason, String code, String retried, String when) {
    boolean namedAfterCode() {
      return reason.equalsIgnoreCase(code);
    }

    String className() {
      return pascal(reason) + "Exception";
    }
  }

  private GenReasons() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: java GenReasons.java proto/reasons.txt proto/wire.txt OUTPUT_DIR");
      System.exit(2);
    }
    Path table = Path.of(args[0]);
    List<Row> rows = parse(Files.readAllLines(table, StandardCharsets.UTF_8), table.toString());
    Path wire = Path.of(args[1]);
    List<String[]> wireRows =
        cells(Files.readAllLines(wire, StandardCharsets.UTF_8), wire.toString());
    Path wireDir = Path.of(args[2]).resolve(WireTable.PACKAGE.replace('.', '/'));
    Files.createDirectories(wireDir);
    write(wireDir, "Wire", WireTable.render(wireRows));
    Path dir = Path.of(args[2]).resolve(PACKAGE.replace('.', '/'));
    Files.createDirectories(dir);
    write(dir, "Reason", reasonEnum(rows));
    write(dir, "ErrorTable", errorTable(rows));
    for (String code : codes(rows)) {
      write(dir, codeClass(code), codeException(code, rows));
    }
    for (Row row : rows) {
      if (!row.namedAfterCode()) {
        write(dir, row.className(), reasonException(row));
      }
    }
  }

  static List<Row> parse(List<String> lines, String where) {
    List<Row> rows = new ArrayList<>();
    for (String[] cells : cells(lines, where)) {
      Row row = new Row(cells[0], cells[1], cells[2], cells[3]);
      if (!row.reason().matches("[a-z][a-z_]*") || !row.code().matches("[A-Z][A-Z_]*")) {
        throw new IllegalArgumentException(where + ": malformed reason or code: " + row.reason());
      }
      if (!RETRIES.contains(row.retried())) {
        throw new IllegalArgumentException(
            where + ": " + row.reason() + " retried is " + row.retried());
      }
      rows.add(row);
    }
    return rows;
  }

  /** A table's rows, four stripped cells split by "|", without blank lines and "#" comments. */
  static List<String[]> cells(List<String> lines, String where) {
    List<String[]> rows = new ArrayList<>();
    for (int n = 0; n < lines.size(); n++) {
      String line = lines.get(n).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] cells = line.split("\\|", 4);
      if (cells.length != 4) {
        throw new IllegalArgumentException(where + ":" + (n + 1) + ": want 4 cells split by |");
      }
      for (int i = 0; i < cells.length; i++) {
        cells[i] = cells[i].strip();
      }
      rows.add(cells);
    }
    if (rows.isEmpty()) {
      throw new IllegalArgumentException(where + ": no rows");
    }
    return rows;
  }

  /** {@code not_found} or {@code NOT_FOUND} as {@code NotFound}. */
  static String pascal(String name) {
    StringBuilder b = new StringBuilder();
    for (String part : name.toLowerCase(Locale.ROOT).split("_")) {
      if (!part.isEmpty()) {
        b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
      }
    }
    return b.toString();
  }

  static String codeClass(String code) {
    return pascal(code) + "Exception";
  }

  /** The table's gRPC codes, in their order of first appearance. */
  static Set<String> codes(List<Row> rows) {
    Set<String> codes = new LinkedHashSet<>();
    rows.forEach(r -> codes.add(r.code()));
    return codes;
  }

  static String javadoc(String text, String indent) {
    String safe = text.replace("*/", "*&#47;").replace("@", "{@literal @}");
    return indent + "/** " + safe + " */\n";
  }

  static String header() {
    return "// Generated by client/java/client/src/build/java/GenReasons.java from proto/reasons.txt."
        + " Do not edit.\n\npackage "
        + PACKAGE
        + ";\n\n";
  }

  static String reasonEnum(List<Row> rows) {
    StringBuilder b = new StringBuilder(header());
    b.append("import io.grpc.Status;\n\n");
    b.append(
        "/**\n * A reason of the error table (proto/reasons.txt): what a node puts in an error's"
            + " ErrorDetail,\n * the gRPC code it always travels with, and what the client does"
            + " with it on its own.\n */\n");
    b.append("public enum Reason {\n");
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      b.append(javadoc(r.code() + ", retried: " + r.retried() + ". " + r.when(), "  "));
      b.append("  ")
          .append(r.reason().toUpperCase(Locale.ROOT))
          .append("(\"")
          .append(r.reason())
          .append("\", Status.Code.")
          .append(r.code())
          .append(", Retry.")
          .append(r.retried().toUpperCase(Locale.ROOT))
          .append(i == rows.size() - 1 ? ");\n\n" : "),\n");
    }
    b.append(
        """
          private final String wireName;
          private final Status.Code code;
          private final Retry retry;

          Reason(String wireName, Status.Code code, Retry retry) {
            this.wireName = wireName;
            this.code = code;
            this.retry = retry;
          }

          /** The reason as a node names it ("not_leader"). */
          public String wireName() {
            return wireName;
          }

          /** The gRPC code this reason always travels with. */
          public Status.Code code() {
            return code;
          }

          /** What the client does on its own with an error of this reason. */
          public Retry retry() {
            return retry;
          }

          /** The reason named {@code wireName}, if this build knows it (a newer node may send one it does not). */
          public static java.util.Optional<Reason> fromWireName(String wireName) {
            for (Reason r : values()) {
              if (r.wireName.equals(wireName)) {
                return java.util.Optional.of(r);
              }
            }
            return java.util.Optional.empty();
          }
        }
        """);
    return b.toString();
  }

  static String errorTable(List<Row> rows) {
    StringBuilder b = new StringBuilder(header());
    b.append("import io.grpc.Status;\n\n");
    b.append("/** Which exception class a status of the table is. */\n");
    b.append("final class ErrorTable {\n  private ErrorTable() {}\n\n");
    b.append(
        "  /** The exception of a known reason (which travels with its code). */\n"
            + "  static HandlestoreException ofReason(Reason reason, String message,"
            + " ErrorDetails details, Throwable cause) {\n"
            + "    return switch (reason) {\n");
    for (Row r : rows) {
      String cls = r.namedAfterCode() ? codeClass(r.code()) : r.className();
      b.append("      case ")
          .append(r.reason().toUpperCase(Locale.ROOT))
          .append(" -> new ")
          .append(cls)
          .append("(message, details, cause);\n");
    }
    b.append("    };\n  }\n\n");
    b.append(
        "  /** The exception of a code without a known reason (null: a code the table lacks). */\n"
            + "  static HandlestoreException ofCode(Status.Code code, String message,"
            + " ErrorDetails details, Throwable cause) {\n"
            + "    return switch (code) {\n");
    for (String code : codes(rows)) {
      b.append("      case ")
          .append(code)
          .append(" -> new ")
          .append(codeClass(code))
          .append("(message, details, cause);\n");
    }
    b.append("      default -> null;\n    };\n  }\n}\n");
    return b.toString();
  }

  static String codeException(String code, List<Row> rows) {
    StringBuilder doc = new StringBuilder("Every error of gRPC code " + code + ".");
    rows.stream()
        .filter(r -> r.code().equals(code) && r.namedAfterCode())
        .forEach(r -> doc.append(" Reason ").append(r.reason()).append(": ").append(r.when()));
    List<String> subs =
        rows.stream()
            .filter(r -> r.code().equals(code) && !r.namedAfterCode())
            .map(Row::className)
            .toList();
    if (!subs.isEmpty()) {
      doc.append(" Its reasons' own classes: ").append(String.join(", ", subs)).append('.');
    }
    return exceptionClass(codeClass(code), "HandlestoreException", "Status.Code." + code, doc);
  }

  static String reasonException(Row r) {
    StringBuilder doc = new StringBuilder("Reason " + r.reason() + " (" + r.code());
    doc.append(", retried: ").append(r.retried()).append("): ").append(r.when());
    return exceptionClass(r.className(), codeClass(r.code()), null, doc);
  }

  /** An exception class; {@code code} goes to the base class when it is a code's class. */
  static String exceptionClass(String name, String parent, String code, CharSequence doc) {
    StringBuilder b = new StringBuilder(header());
    if (code != null) {
      b.append("import io.grpc.Status;\n\n");
    }
    b.append(javadoc(doc.toString(), ""));
    b.append("public class ").append(name).append(" extends ").append(parent).append(" {\n");
    b.append("  private static final long serialVersionUID = 1L;\n\n");
    b.append("  /** An error of this class, as a node gave it or the client found it. */\n");
    b.append("  public ")
        .append(name)
        .append("(String message, ErrorDetails details, Throwable cause) {\n");
    b.append(code != null ? "    super(" + code + ", " : "    super(");
    b.append("message, details, cause);\n  }\n");
    b.append("}\n");
    return b.toString();
  }

  /**
   * The wire constants (proto/wire.txt: name | kind | value | what) as {@code Wire}: a {@code
   * public static final} field per row, named in UPPER_SNAKE and documented by its "what"; "ms" as
   * a {@link java.time.Duration}, "count" and "bytes" as an {@code int}, "strings" (texts split by
   * ", ") as an immutable {@code List<String>}.
   */
  static final class WireTable {
    static final String PACKAGE = "io.github.handlestore.client.internal";

    private WireTable() {}

    static String render(List<String[]> rows) {
      StringBuilder b =
          new StringBuilder(
              "// Generated by client/java/client/src/build/java/GenReasons.java from"
                  + " proto/wire.txt. Do not edit.\n\npackage "
                  + PACKAGE
                  + ";\n\nimport java.time.Duration;\nimport java.util.List;\n\n");
      b.append(
          "/**\n * The wire constants and client defaults of proto/wire.txt, which every client"
              + " and the node say\n * alike.\n */\n");
      b.append("public final class Wire {\n  private Wire() {}\n");
      for (String[] r : rows) {
        if (!r[0].matches("[a-z][a-z0-9_]*")) {
          throw new IllegalArgumentException("proto/wire.txt: malformed name " + r[0]);
        }
        b.append('\n').append(javadoc(r[3], "  "));
        b.append("  public static final ")
            .append(field(r[0].toUpperCase(Locale.ROOT), r[1], r[2]))
            .append(";\n");
      }
      return b.append("}\n").toString();
    }

    /** "TYPE NAME = VALUE" of a row. */
    static String field(String name, String kind, String value) {
      return switch (kind) {
        case "string" -> "String " + name + " = " + quote(value);
        case "ms" -> "Duration " + name + " = Duration.ofMillis(" + number(value) + ")";
        case "count", "bytes" -> "int " + name + " = " + number(value);
        case "strings" ->
            "List<String> "
                + name
                + " =\n      List.of("
                + Arrays.stream(value.split(", ", -1))
                    .map(WireTable::quote)
                    .collect(Collectors.joining(", "))
                + ")";
        default -> throw new IllegalArgumentException("proto/wire.txt: unknown kind " + kind);
      };
    }

    static String number(String value) {
      if (!value.matches("[0-9]+")) {
        throw new IllegalArgumentException("proto/wire.txt: not a whole number: " + value);
      }
      return value;
    }

    static String quote(String s) {
      return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
  }

  static void write(Path dir, String name, String source) throws IOException {
    Files.writeString(dir.resolve(name + ".java"), source, StandardCharsets.UTF_8);
  }
}
