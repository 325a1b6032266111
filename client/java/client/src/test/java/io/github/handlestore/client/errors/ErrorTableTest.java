package io.github.handlestore.client.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.handlestore.client.testkit.Binary;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The generated error classes are proto/reasons.txt: every row, read here on its own, has its
 * {@link Reason} with its code and retry, and a status of that reason becomes the row's class,
 * below its code's class.
 */
class ErrorTableTest {
  record Row(String reason, String code, String retried) {}

  static List<Row> rows() throws IOException {
    return Files.readAllLines(Binary.repo().resolve("proto/reasons.txt")).stream()
        .map(String::strip)
        .filter(l -> !l.isEmpty() && !l.startsWith("#"))
        .map(l -> l.split("\\|"))
        .map(c -> new Row(c[0].strip(), c[1].strip(), c[2].strip()))
        .toList();
  }

  static String pascal(String name) {
    StringBuilder b = new StringBuilder();
    for (String part : name.toLowerCase(Locale.ROOT).split("_")) {
      b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
    }
    return b.toString();
  }

  @Test
  void everyRowIsAReasonAndAClass() throws IOException {
    List<Row> rows = rows();
    assertEquals(rows.size(), Reason.values().length, "one Reason per row");
    for (Row row : rows) {
      Reason r =
          Reason.fromWireName(row.reason()).orElseThrow(() -> new AssertionError(row.reason()));
      assertEquals(row.code(), r.code().name(), row.reason());
      assertEquals(row.retried(), r.retry().name().toLowerCase(Locale.ROOT), row.reason());
      Status.Code code = Status.Code.valueOf(row.code());
      HandlestoreException e = HandlestoreException.of(code, "why", ErrorDetails.of(r));
      String cls = row.reason().equalsIgnoreCase(row.code()) ? row.code() : row.reason();
      assertEquals(pascal(cls) + "Exception", e.getClass().getSimpleName(), row.reason());
      assertEquals(
          pascal(row.code()) + "Exception",
          row.reason().equalsIgnoreCase(row.code())
              ? e.getClass().getSimpleName()
              : e.getClass().getSuperclass().getSimpleName());
      assertEquals(r, e.reason().orElseThrow());
      assertEquals(code, e.code());
      assertEquals("why", e.getMessage());
    }
  }

  @Test
  void aReasonWithAnotherCodeIsDroppedAndAnUnknownOneKept() {
    HandlestoreException wrong =
        HandlestoreException.of(Status.Code.NOT_FOUND, "m", ErrorDetails.of(Reason.NOT_LEADER));
    assertInstanceOf(NotFoundException.class, wrong);
    assertTrue(wrong.reason().isEmpty());
    assertEquals("", wrong.reasonName());

    HandlestoreException newer =
        HandlestoreException.of(
            Status.Code.UNAVAILABLE, "m", new ErrorDetails("from_the_future", 0, "", 0, 0));
    assertInstanceOf(UnavailableException.class, newer);
    assertTrue(newer.reason().isEmpty());
    assertEquals("from_the_future", newer.reasonName());

    HandlestoreException other = HandlestoreException.of(Status.Code.UNIMPLEMENTED, "m", null);
    assertEquals(HandlestoreException.class, other.getClass());
    assertEquals(Status.Code.UNIMPLEMENTED, other.code());
  }

  @Test
  void theClientsDeadlineIsADeadlineExceededWithTheLastRefusalAsCause() {
    HandlestoreException last =
        HandlestoreException.of(
            Status.Code.UNAVAILABLE, "n1: no", ErrorDetails.of(Reason.NO_QUORUM));
    CallDeadlineException e = new CallDeadlineException(java.time.Duration.ofSeconds(2), last);
    assertInstanceOf(DeadlineExceededException.class, e);
    assertEquals(last, e.getCause());
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.code());
  }
}
