use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

fn write_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "node-7.internal".into()]).expect("cert");
    let (c, k) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}-key.pem")));
    std::fs::write(&c, cert.pem()).expect("write");
    std::fs::write(&k, signing_key.serialize_pem()).expect("write");
    (c, k)
}

fn files(cert: &Path, key: &Path, ca: Option<&Path>) -> TlsFiles {
    TlsFiles {
        cert: cert.into(),
        key: key.into(),
        ca: ca.map(Path::to_path_buf),
    }
}

#[test]
fn loads_and_names_the_wrong_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = write_pair(dir.path(), "a");
    server::load("test", files(&cert, &key, Some(&cert)), None).expect("loads");
    peer::load_client(files(&cert, &key, Some(&cert))).expect("loads");
    let missing = dir.path().join("missing.pem");
    let err = server::load("test", files(&missing, &key, None), None)
        .err()
        .expect("a missing file fails");
    assert!(format!("{err:#}").contains("missing.pem"), "{err:#}");
    let (_, other_key) = write_pair(dir.path(), "b");
    let err = server::load("test", files(&cert, &other_key, None), None)
        .err()
        .expect("a key of another certificate fails");
    assert!(format!("{err:#}").contains("key pair"), "{err:#}");
    let err = peer::load_client(files(&cert, &key, None))
        .err()
        .expect("peers need a CA");
    assert!(format!("{err:#}").contains("--peer-tls-ca"), "{err:#}");
}

#[test]
fn a_bad_file_at_reload_keeps_the_config_in_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = write_pair(dir.path(), "a");
    let tls = server::load("test", files(&cert, &key, None), None).expect("loads");
    let before = Arc::as_ptr(&tls.current());
    std::fs::write(&cert, "not a certificate").expect("write");
    assert!(tls.changed(), "the change is noticed");
    tls.reload("test");
    assert_eq!(Arc::as_ptr(&tls.current()), before, "kept");
    assert!(!tls.changed(), "not tried again until the files change again");
    write_pair(dir.path(), "a");
    tls.reload("test");
    assert_ne!(Arc::as_ptr(&tls.current()), before, "swapped");
}

#[test]
fn a_certificate_names_its_common_name_and_dns_names() {
    let mut params = rcgen::CertificateParams::new(vec!["n1.internal".into(), "10.0.0.1".into()]).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, "node-1");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("cert");
    let names = names::names_of(cert.der());
    assert_eq!(names, vec!["node-1".to_string(), "n1.internal".to_string()]);
    assert!(names::names_of(&rustls::pki_types::CertificateDer::from(vec![1, 2, 3])).is_empty());
}
