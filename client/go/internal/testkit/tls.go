package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// handlestoreTLS is the crypto/tls form of the client's TLS, for the
// harness's own admin calls.
func handlestoreTLS(t *handlestore.TLS) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CA) {
		return nil, errors.New("no CA certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
