package handlestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFromEnvReadsTheVariablesOfTheOtherClients(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("  s3cret \nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HANDLESTORE_ENDPOINTS": "127.0.0.1:1, 127.0.0.1:2,,",
		"HANDLESTORE_NAMESPACE": "tenant-a", "HANDLESTORE_TOKEN_FILE": token,
	}
	cfg, err := configFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Endpoints, " ") != "127.0.0.1:1 127.0.0.1:2" || cfg.Namespace != "tenant-a" || cfg.Token != "s3cret" || cfg.TLS != nil {
		t.Fatalf("got %+v", cfg)
	}
	env["HANDLESTORE_TOKEN"] = "direct"
	if cfg, _ = configFromEnv(func(k string) string { return env[k] }); cfg.Token != "direct" {
		t.Fatalf("HANDLESTORE_TOKEN comes before the file: %q", cfg.Token)
	}
	env["HANDLESTORE_CERT"] = "only-a-cert.pem"
	env["HANDLESTORE_CACERT"] = token
	if _, err := configFromEnv(func(k string) string { return env[k] }); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a certificate without its key: %v", err)
	}
}

func TestEndpointsAreCheckedAsTheOtherClientsCheckThem(t *testing.T) {
	good := map[string]string{"127.0.0.1:7401": "127.0.0.1:7401", "http://h:1/": "h:1"}
	for raw, want := range good {
		if got, err := parseEndpoint(raw, false); err != nil || got != want {
			t.Errorf("%s: %q %v", raw, got, err)
		}
	}
	for _, raw := range []string{"https://h:1", "grpc://h:1", "h", "http://h:1/x"} {
		if _, err := parseEndpoint(raw, false); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: accepted", raw)
		}
	}
	if _, err := parseEndpoint("http://h:1", true); err == nil {
		t.Error("http with TLS accepted")
	}
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("no endpoints: %v", err)
	}
	if _, err := New(Config{Endpoints: []string{"h:1"}, Token: "a\nb"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a token with a newline: %v", err)
	}
}

func TestHandleIDsAreMcpkitsAndCheckedAsTheNodeChecksThem(t *testing.T) {
	id := NewHandleID("cart")
	if !strings.HasPrefix(id, "cart-") || len(id) != 5+26 || CheckHandleID(id) != nil || CheckHandleID(NewHandleID("")) != nil {
		t.Fatalf("minted %q", id)
	}
	for _, bad := range []string{"", "cart-", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXY1", "b@d-" + NewHandleID(""), strings.Repeat("a", 65) + "-" + NewHandleID("")} {
		if err := CheckHandleID(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "a\tb", strings.Repeat("k", 1025)} {
		if CheckKey(bad) == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
	if CheckKey("checkpoints/agent-7/latest") != nil || CheckPrefix("") != nil || CheckPrefix("a/") != nil {
		t.Error("a good key or prefix refused")
	}
}
