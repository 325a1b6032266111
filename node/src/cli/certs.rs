//! `handlestore certs`: a certificate authority, and node and client
//! certificates signed by it (rcgen), for development and for Compose.
//!
//! The files, in one directory: `ca.pem` and `ca-key.pem`; per node
//! `node-ID.pem` and `node-ID-key.pem` (server and client use: a node shows
//! it to clients and to its peers); per client `client-NAME.pem` and
//! `client-NAME-key.pem` (client use; the common name is the identity).
//! An existing CA in the directory signs new certificates, so clients can
//! be added later; an existing certificate is never replaced without
//! `--force`. Private keys are written readable by their owner only.

use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};

use super::CliError;

#[derive(clap::Args, Debug)]
pub struct CertsArgs {
    /// Directory for the files (created if missing).
    #[arg(long, default_value = "./certs")]
    pub dir: PathBuf,
    /// A node certificate, ID=HOST[,HOST...]: the names and IP addresses
    /// the node is reached at. Repeatable. With neither --node nor
    /// --client: nodes 1, 2 and 3 at localhost and 127.0.0.1, and a client
    /// named root.
    #[arg(long = "node", value_name = "ID=HOSTS")]
    pub nodes: Vec<String>,
    /// A client certificate whose common name is NAME (its identity where
    /// nodes require client certificates). Repeatable.
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Days the new certificates are valid.
    #[arg(long, default_value_t = 365)]
    pub days: u32,
    /// Replace node and client certificates that exist (never the CA).
    #[arg(long)]
    pub force: bool,
}

/// One certificate to make.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    Node { id: u64, hosts: Vec<String> },
    Client { name: String },
}

impl Subject {
    fn file_stem(&self) -> String {
        match self {
            Subject::Node { id, .. } => format!("node-{id}"),
            Subject::Client { name } => format!("client-{name}"),
        }
    }
}

fn parse_node(s: &str) -> Result<Subject, String> {
    let (id, hosts) = s
        .split_once('=')
        .ok_or_else(|| format!("--node '{s}' is not ID=HOST[,HOST...]"))?;
    let id: u64 = id
        .trim()
        .parse()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| format!("--node '{s}': '{id}' is not a node id"))?;
    let hosts: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect();
    if hosts.is_empty() {
        return Err(format!("--node '{s}' names no host"));
    }
    Ok(Subject::Node { id, hosts })
}

fn parse_client(name: &str) -> Result<Subject, String> {
    let valid =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
    if !valid {
        return Err(format!(
            "--client '{name}': a name is 1 to 64 letters, digits, '-', '_', '.' or '@'"
        ));
    }
    // Node certificates are named node-ID, and the peer port lets members
    // in by that name (tls::gate): a client must never have one.
    let node_like = name
        .strip_prefix("node-")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
    if node_like {
        return Err(format!(
            "--client '{name}': names node-ID are the nodes' own (the peer port lets members in by them)"
        ));
    }
    Ok(Subject::Client { name: name.into() })
}

fn subjects(args: &CertsArgs) -> Result<Vec<Subject>, String> {
    if args.nodes.is_empty() && args.clients.is_empty() {
        let local = || vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let mut out: Vec<Subject> = (1..=3).map(|id| Subject::Node { id, hosts: local() }).collect();
        out.push(Subject::Client { name: "root".into() });
        return Ok(out);
    }
    let nodes = args.nodes.iter().map(|n| parse_node(n));
    let clients = args.clients.iter().map(|c| parse_client(c));
    nodes.chain(clients).collect()
}

/// Writes `contents` to `path`; a private key readable by its owner only.
fn write_file(path: &Path, contents: &str, private: bool) -> Result<(), CliError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    if private {
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .map_err(|e| CliError::new(2, format!("writing {}: {e}", path.display())))?;
    f.write_all(contents.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| CliError::new(2, format!("writing {}: {e}", path.display())))
}

fn tls_err(what: &str) -> impl Fn(rcgen::Error) -> CliError + '_ {
    move |e| CliError::new(2, format!("{what}: {e}"))
}

/// Validity for `days` from now, and from a day back: a node whose clock
/// runs behind (by up to a day) still accepts its peers' certificates.
fn validity(params: &mut CertificateParams, days: u32) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(i64::from(days.max(1)));
}

/// The CA in `dir`, made if there is none.
fn load_or_make_ca(dir: &Path, days: u32) -> Result<Issuer<'static, KeyPair>, CliError> {
    let (cert_path, key_path) = (dir.join("ca.pem"), dir.join("ca-key.pem"));
    if cert_path.exists() || key_path.exists() {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| CliError::new(2, format!("reading {}: {e}", p.display())))
        };
        let key = KeyPair::from_pem(&read(&key_path)?).map_err(tls_err("ca-key.pem"))?;
        let issuer = Issuer::from_ca_cert_pem(&read(&cert_path)?, key).map_err(tls_err("ca.pem"))?;
        println!("using the CA in {}", cert_path.display());
        return Ok(issuer);
    }
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, "handlestore CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, days.max(3650));
    let key = KeyPair::generate().map_err(tls_err("generating the CA key"))?;
    let cert = params.self_signed(&key).map_err(tls_err("signing the CA"))?;
    write_file(&key_path, &key.serialize_pem(), true)?;
    write_file(&cert_path, &cert.pem(), false)?;
    println!("created a CA: {}", cert_path.display());
    Ok(Issuer::new(params, key))
}

/// The parameters of a node's or a client's certificate.
fn leaf_params(subject: &Subject, days: u32) -> Result<CertificateParams, CliError> {
    let mut params = CertificateParams::default();
    match subject {
        Subject::Node { id, hosts } => {
            params.distinguished_name.push(DnType::CommonName, format!("node-{id}"));
            for host in hosts {
                let san = match host.parse::<IpAddr>() {
                    Ok(ip) => SanType::IpAddress(ip),
                    Err(_) => SanType::DnsName(host.clone().try_into().map_err(tls_err("a host name"))?),
                };
                params.subject_alt_names.push(san);
            }
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        }
        Subject::Client { name } => {
            params.distinguished_name.push(DnType::CommonName, name.clone());
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, days);
    Ok(params)
}

fn make_leaf(dir: &Path, ca: &Issuer<'_, KeyPair>, subject: &Subject, args: &CertsArgs) -> Result<(), CliError> {
    let stem = subject.file_stem();
    let (cert_path, key_path) = (dir.join(format!("{stem}.pem")), dir.join(format!("{stem}-key.pem")));
    if !args.force && (cert_path.exists() || key_path.exists()) {
        println!("kept {} (exists; --force replaces it)", cert_path.display());
        return Ok(());
    }
    let params = leaf_params(subject, args.days)?;
    let key = KeyPair::generate().map_err(tls_err("generating a key"))?;
    let cert = params.signed_by(&key, ca).map_err(tls_err("signing"))?;
    write_file(&key_path, &key.serialize_pem(), true)?;
    write_file(&cert_path, &cert.pem(), false)?;
    println!("created {}", cert_path.display());
    Ok(())
}

pub fn run(args: CertsArgs) -> Result<(), CliError> {
    let subjects = subjects(&args).map_err(|e| CliError::new(2, e))?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| CliError::new(2, format!("creating {}: {e}", args.dir.display())))?;
    let ca = load_or_make_ca(&args.dir, args.days)?;
    for subject in &subjects {
        make_leaf(&args.dir, &ca, subject, &args)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_subjects() {
        assert_eq!(
            parse_node("2=n2.example, 10.0.0.2").expect("parses"),
            Subject::Node {
                id: 2,
                hosts: vec!["n2.example".into(), "10.0.0.2".into()]
            }
        );
        for bad in ["", "2", "0=a", "x=a", "2="] {
            assert!(parse_node(bad).is_err(), "{bad}");
        }
        assert!(parse_client("cart-server").is_ok());
        for bad in ["", "a b", "x/y", &"n".repeat(65), "node-1", "node-42"] {
            assert!(parse_client(bad).is_err(), "{bad}");
        }
        assert!(parse_client("node-admin").is_ok());
    }

    #[test]
    fn defaults_to_a_dev_cluster() {
        let args = CertsArgs {
            dir: PathBuf::new(),
            nodes: vec![],
            clients: vec![],
            days: 1,
            force: false,
        };
        let s = subjects(&args).expect("subjects");
        assert_eq!(s.len(), 4);
        assert_eq!(s[3].file_stem(), "client-root");
    }

    #[test]
    fn a_ca_is_made_once_and_signs_later_certificates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = CertsArgs {
            dir: dir.path().into(),
            nodes: vec!["1=localhost".into()],
            clients: vec![],
            days: 1,
            force: false,
        };
        run(args).expect("first run");
        let ca = std::fs::read(dir.path().join("ca.pem")).expect("ca");
        let args = CertsArgs {
            dir: dir.path().into(),
            nodes: vec![],
            clients: vec!["alice".into()],
            days: 1,
            force: false,
        };
        run(args).expect("second run");
        assert_eq!(
            std::fs::read(dir.path().join("ca.pem")).expect("ca"),
            ca,
            "the CA is kept"
        );
        for f in [
            "node-1.pem",
            "node-1-key.pem",
            "client-alice.pem",
            "client-alice-key.pem",
        ] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
        let mode = std::fs::metadata(dir.path().join("client-alice-key.pem"))
            .expect("key")
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o077,
            0,
            "keys are private"
        );
    }
}
