// Command genreasons writes reasons_gen.go, the Go form of the error table
// proto/reasons.txt: a Reason constant per row, the table itself (gRPC
// code, whether the client retries), and an error value per reason for
// errors.Is. With -wire it writes wire_gen.go instead, the constants of
// proto/wire.txt (wire.go). scripts/gen.sh runs it; its --check compares
// the output with the committed files.
//
//	go run ./internal/cmd/genreasons ../../proto/reasons.txt > reasons_gen.go
//	go run ./internal/cmd/genreasons -wire ../../proto/wire.txt > wire_gen.go
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"io"
	"os"
	"strings"
)

// row is one line of the table: reason | gRPC code | retried | when.
type row struct {
	reason, code, retried, when string
}

func main() {
	render := renderReasons
	args := os.Args[1:]
	if len(args) == 2 && args[0] == "-wire" {
		render, args = renderWire, args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: genreasons proto/reasons.txt > reasons_gen.go\n       genreasons -wire proto/wire.txt > wire_gen.go")
		os.Exit(2)
	}
	if err := run(args[0], render, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "genreasons:", err)
		os.Exit(1)
	}
}

// run renders the table at path, one row of four cells at a time, as Go
// source formatted by gofmt's rules.
func run(path string, render func([][4]string) ([]byte, error), out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	raw, err := render(rows)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	src, err := format.Source(raw)
	if err != nil {
		return fmt.Errorf("formatting the output: %w", err)
	}
	_, err = out.Write(src)
	return err
}

// parse reads a table's rows (four cells separated by "|"), skipping blank
// lines and "#" comments.
func parse(r io.Reader) ([][4]string, error) {
	var rows [][4]string
	scanner := bufio.NewScanner(r)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("line %d: want 4 cells separated by |, got %d", n, len(cells))
		}
		var cut [4]string
		for i := range cells {
			cut[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cut)
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows")
	}
	return rows, nil
}

// camel turns "not_found" / "NOT_FOUND" into "NotFound".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.ToLower(s), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

var retries = map[string]string{"yes": "RetryYes", "no": "RetryNo", "resume": "RetryResume"}

// renderReasons writes reasons_gen.go from proto/reasons.txt's rows.
func renderReasons(cells [][4]string) ([]byte, error) {
	rows := make([]row, len(cells))
	for i, c := range cells {
		rows[i] = row{c[0], c[1], c[2], c[3]}
	}
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("const (\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "// Reason%s (%s): %s\nReason%s Reason = %q\n", camel(r.reason), r.code, r.when, camel(r.reason), r.reason)
	}
	b.WriteString(")\n\n// reasonTable is proto/reasons.txt, in its order.\nvar reasonTable = []reasonRow{\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "{Reason%s, codes.%s, %s},\n", camel(r.reason), camel(r.code), retries[r.retried])
	}
	b.WriteString("}\n\n")
	writeSentinels(&b, rows)
	return b.Bytes(), nil
}

// writeSentinels writes an error value per reason, and one per gRPC code of
// the table that no reason is named after (FailedPrecondition, Unavailable,
// ...): errors.Is matches the first by reason, the second by code. A reason
// named after its code (not_found, invalid_argument, ...) matches by code,
// so ErrInvalidArgument also matches a value_too_large.
func writeSentinels(b *bytes.Buffer, rows []row) {
	named := map[string]bool{}
	for _, r := range rows {
		if strings.EqualFold(r.reason, r.code) {
			named[r.code] = true
		}
	}
	b.WriteString("var (\n")
	seen := map[string]bool{}
	for _, r := range rows {
		if !named[r.code] && !seen[r.code] {
			seen[r.code] = true
			fmt.Fprintf(b, "// Err%s matches every error of gRPC code %s, whatever its reason.\nErr%s error = &sentinel{code: codes.%s, byCode: true}\n", camel(r.code), r.code, camel(r.code), camel(r.code))
		}
	}
	for _, r := range rows {
		if strings.EqualFold(r.reason, r.code) {
			fmt.Fprintf(b, "// Err%s matches every error of gRPC code %s (reason %q or another).\nErr%s error = &sentinel{reason: Reason%s, code: codes.%s, byCode: true}\n", camel(r.reason), r.code, r.reason, camel(r.reason), camel(r.reason), camel(r.code))
			continue
		}
		fmt.Fprintf(b, "// Err%s matches the errors of reason %q (code %s).\nErr%s error = &sentinel{reason: Reason%s, code: codes.%s}\n", camel(r.reason), r.reason, r.code, camel(r.reason), camel(r.reason), camel(r.code))
	}
	b.WriteString(")\n")
}

const header = `// Code generated by internal/cmd/genreasons from proto/reasons.txt. DO NOT EDIT.

package handlestore

import "google.golang.org/grpc/codes"

`
