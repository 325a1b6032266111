package handlestore

import (
	"os"
	"strings"
)

// FromEnv is the Config the environment gives, with the names the
// `handlestore` CLI and the other clients read: HANDLESTORE_ENDPOINTS
// (comma-separated), HANDLESTORE_NAMESPACE, HANDLESTORE_CACERT (with
// HANDLESTORE_CERT and HANDLESTORE_KEY for a client certificate), and
// HANDLESTORE_TOKEN, else the first line of HANDLESTORE_TOKEN_FILE.
// Change what you like, then pass it to New.
func FromEnv() (Config, error) {
	return configFromEnv(os.Getenv)
}

func configFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Endpoints: endpointList([]string{getenv("HANDLESTORE_ENDPOINTS")}),
		Namespace: getenv("HANDLESTORE_NAMESPACE"),
		Token:     getenv("HANDLESTORE_TOKEN"),
	}
	if ca := getenv("HANDLESTORE_CACERT"); ca != "" {
		tls, err := TLSFromFiles(ca, getenv("HANDLESTORE_CERT"), getenv("HANDLESTORE_KEY"))
		if err != nil {
			return Config{}, err
		}
		c.TLS = tls
	}
	if file := getenv("HANDLESTORE_TOKEN_FILE"); c.Token == "" && file != "" {
		token, err := ReadTokenFile(file)
		if err != nil {
			return Config{}, err
		}
		c.Token = token
	}
	return c, nil
}

// ReadTokenFile reads a token kept in a file (a container secret): its
// first line, trimmed.
func ReadTokenFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	if first = strings.TrimSpace(first); first == "" {
		return "", invalid("%s: the token file is empty", path)
	}
	return first, nil
}
