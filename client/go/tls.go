package handlestore

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// TLS to the nodes: the cluster's CA, and a client certificate with its
// key where the nodes require one (all PEM).
type TLS struct {
	CA   []byte
	Cert []byte
	Key  []byte
}

// TLSFromFiles reads the CA, and a client certificate and its key (both
// or neither: "" for none).
func TLSFromFiles(ca, cert, key string) (*TLS, error) {
	if (cert == "") != (key == "") {
		return nil, invalid("a client certificate needs its key, and a key its certificate")
	}
	t := &TLS{}
	var err error
	if t.CA, err = os.ReadFile(ca); err != nil {
		return nil, err
	}
	if cert != "" {
		if t.Cert, err = os.ReadFile(cert); err != nil {
			return nil, err
		}
		if t.Key, err = os.ReadFile(key); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// config is the crypto/tls configuration of these settings.
func (t *TLS) config() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CA) {
		return nil, invalid("TLS: the CA holds no PEM certificate")
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if (len(t.Cert) == 0) != (len(t.Key) == 0) {
		return nil, invalid("a client certificate needs its key, and a key its certificate")
	}
	if len(t.Cert) > 0 {
		pair, err := tls.X509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, invalid("TLS: the client certificate or key: %v", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
