package handlestore_test

import (
	"testing"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// got is v, or the test fails with err: got(f())(t).
func got[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// got2 is got for two values.
func got2[A, B any](a A, b B, err error) func(*testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}

func handleStore[T any](t *testing.T, c *handlestore.Client, store string, opts handlestore.HandleStoreOptions) *handlestore.HandleStore[T] {
	t.Helper()
	return got(handlestore.NewHandleStore[T](c, store, opts))(t)
}

type cart struct {
	Items []string `json:"items"`
}
