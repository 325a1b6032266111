package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	handlestore "github.com/handlestore/handlestore/client/go"
)

// handlestoreTLS is the crypto/tls form of the client's TLS (with its
// client certificate, if any), for the harness's own admin calls.
func handlestoreTLS(t *handlestore.TLS) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CA) {
		return nil, errors.New("no CA certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if len(t.Cert) > 0 {
		pair, err := tls.X509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
