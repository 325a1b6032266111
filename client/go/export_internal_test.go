package handlestore

// What the external tests (package handlestore_test) reach inside.

// IsName is isName with the default limit, for formatvectors_test.go.
func IsName(s string) bool { return isName(s, maxNameLen) }
