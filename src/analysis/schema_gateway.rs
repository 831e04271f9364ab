//! `schema.ValidationAnalyzer.Gateway`: Istio's `ValidateGateway` (server hosts, ports, binds
//! and TLS settings), errors as IST0106 and warnings as IST0133, with Istio's texts.

use serde::Deserialize;

use crate::istio::config::zero;

use super::Input;
use super::schema_common::{
    Validation, each, is_dns1123_label, is_http, is_ip, is_tls, protocol, validate_ip,
    validate_port, validate_unix_address, validate_wildcard_domain,
};
use crate::findings::Finding;
use crate::kube::snapshot::{ConfigObject, Located};

const UNIX: &str = "unix://";

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GatewaySpec {
    #[serde(deserialize_with = "zero::list")]
    servers: Vec<Server>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Server {
    port: Option<Port>,
    #[serde(deserialize_with = "zero::list")]
    hosts: Vec<String>,
    tls: Option<ServerTls>,
    bind: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Port {
    number: i64,
    protocol: String,
    name: String,
    target_port: i64,
}

/// Istio's `ServerTLSSettings`, the fields its validation reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServerTls {
    pub https_redirect: bool,
    /// Empty means `PASSTHROUGH` (the enum's zero value).
    pub mode: String,
    pub server_certificate: String,
    pub private_key: String,
    pub ca_certificates: String,
    pub ca_crl: String,
    pub credential_name: String,
    #[serde(deserialize_with = "zero::list")]
    pub credential_names: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    pub tls_certificates: Vec<TlsCertificate>,
    #[serde(deserialize_with = "zero::list")]
    pub subject_alt_names: Vec<String>,
    pub min_protocol_version: String,
    #[serde(deserialize_with = "zero::list")]
    pub cipher_suites: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsCertificate {
    server_certificate: String,
    private_key: String,
}

impl ServerTls {
    pub fn mode(&self) -> &str {
        if self.mode.is_empty() {
            "PASSTHROUGH"
        } else {
            &self.mode
        }
    }
}

/// `schema.ValidationAnalyzer.Gateway`.
pub fn gateways(input: &Input, out: &mut Vec<Finding>) {
    each(input, "Gateway", out, validate);
}

fn validate(resource: &Located<ConfigObject>, spec: &GatewaySpec, v: &mut Validation) {
    let name = resource.object.metadata.name.as_deref().unwrap_or("");
    if !is_dns1123_label(name) {
        v.error(format!("invalid gateway name: {name:?}"));
    }
    if spec.servers.is_empty() {
        v.error("gateway must have at least one server");
    }
    for server in &spec.servers {
        validate_server(server, v);
    }
    let mut port_names: Vec<&str> = Vec::new();
    for s in &spec.servers {
        if let Some(p) = &s.port {
            if port_names.contains(&p.name.as_str()) {
                v.error(format!(
                    "port names in servers must be unique: duplicate name {}",
                    p.name
                ));
            }
            port_names.push(&p.name);
            if !is_http(protocol(&p.protocol)) && s.tls.as_ref().is_some_and(|t| t.https_redirect) {
                v.warn("tls.httpsRedirect should only be used with http servers");
            }
        }
    }
}

fn validate_server(server: &Server, v: &mut Validation) {
    if server.hosts.is_empty() {
        v.error("server config must contain at least one host");
    }
    for host in &server.hosts {
        v.extend(namespace_slash_hostname(host, true));
    }
    let before = v.errors.len();
    validate_server_port(server.port.as_ref(), &server.bind, v);
    let port_ok = v.errors.len() == before;
    validate_server_bind(server.port.as_ref(), &server.bind, v);
    if let Some(tls) = &server.tls {
        tls_options(tls, v);
    }
    if let (true, Some(port)) = (port_ok, &server.port) {
        let p = protocol(&port.protocol);
        match &server.tls {
            None if is_tls(p) => v.error("server must have TLS settings for HTTPS/TLS protocols"),
            Some(tls) if !is_tls(p) => {
                if is_http(p) {
                    let passthrough = matches!(tls.mode(), "PASSTHROUGH" | "AUTO_PASSTHROUGH");
                    if !passthrough
                        || !tls.ca_certificates.is_empty()
                        || !tls.private_key.is_empty()
                        || !tls.server_certificate.is_empty()
                    {
                        v.error("server cannot have TLS settings for plain text HTTP ports");
                    }
                } else {
                    v.error("server cannot have TLS settings for non HTTPS/TLS ports");
                }
            }
            _ => {}
        }
    }
}

fn validate_server_port(port: Option<&Port>, bind: &str, v: &mut Validation) {
    let Some(port) = port else {
        v.error("port is required");
        return;
    };
    if protocol(&port.protocol).is_none() {
        v.error(format!(
            "invalid protocol {:?}, supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, REDIS, MYSQL, TCP",
            port.protocol
        ));
    }
    if port.number > 0 || !bind.starts_with(UNIX) {
        v.check(validate_port(port.number));
    }
    if port.target_port > 0 {
        v.error("targetPort has no impact on Gateways");
    }
    if port.name.is_empty() {
        v.error(format!("port name must be set: {}", port_text(port)));
    }
}

/// Go's `%v` of the Port message (protobuf text format, fields in declaration order).
fn port_text(port: &Port) -> String {
    let mut fields = Vec::new();
    if port.number != 0 {
        fields.push(format!("number:{}", port.number));
    }
    if !port.protocol.is_empty() {
        fields.push(format!("protocol:{:?}", port.protocol));
    }
    if !port.name.is_empty() {
        fields.push(format!("name:{:?}", port.name));
    }
    if port.target_port != 0 {
        fields.push(format!("target_port:{}", port.target_port));
    }
    fields.join(" ")
}

fn validate_server_bind(port: Option<&Port>, bind: &str, v: &mut Validation) {
    if let Some(path) = bind.strip_prefix(UNIX) {
        v.check(validate_unix_address(path));
        if let Some(p) = port.filter(|p| p.number != 0) {
            v.error(format!(
                "port number must be 0 for unix domain socket: {}",
                port_text(p)
            ));
        }
    } else if !bind.is_empty() {
        v.check(validate_ip(bind));
    }
}

/// Istio's `validateTLSOptions` (shared with Sidecar ingress TLS).
pub fn tls_options(tls: &ServerTls, v: &mut Validation) {
    if matches!(tls.min_protocol_version.as_str(), "TLSV1_0" | "TLSV1_1")
        && tls.cipher_suites.is_empty()
    {
        v.warn("TLS version below TLSV1_2 require setting compatible ciphers as by default they no longer include compatible ciphers.");
    }
    let mut invalid: Vec<&str> = Vec::new();
    let mut valid: Vec<&str> = Vec::new();
    let mut duplicate: Vec<&str> = Vec::new();
    for cs in &tls.cipher_suites {
        if !valid_cipher_suite(cs) {
            if !invalid.contains(&cs.as_str()) {
                invalid.push(cs);
            }
        } else if valid.contains(&cs.as_str()) {
            if !duplicate.contains(&cs.as_str()) {
                duplicate.push(cs);
            }
        } else {
            valid.push(cs);
        }
    }
    invalid.sort_unstable();
    duplicate.sort_unstable();
    if !invalid.is_empty() {
        v.warn(format!(
            "ignoring invalid cipher suites: [{}]",
            invalid.join(" ")
        ));
    }
    if !duplicate.is_empty() {
        v.warn(format!(
            "ignoring duplicate cipher suites: [{}]",
            duplicate.join(" ")
        ));
    }
    let mode = tls.mode();
    if mode == "ISTIO_MUTUAL" {
        for (set, what) in [
            (!tls.server_certificate.is_empty(), "server certificate"),
            (!tls.private_key.is_empty(), "private key"),
            (!tls.ca_certificates.is_empty(), "CA bundle"),
            (!tls.tls_certificates.is_empty(), "tlsCertificates"),
            (!tls.credential_name.is_empty(), "credentialName"),
            (!tls.credential_names.is_empty(), "credentialNames"),
        ] {
            if set {
                v.error(format!("ISTIO_MUTUAL TLS cannot have associated {what}"));
            }
        }
        return;
    }
    if matches!(mode, "PASSTHROUGH" | "AUTO_PASSTHROUGH")
        && (!tls.ca_crl.is_empty()
            || !tls.server_certificate.is_empty()
            || !tls.private_key.is_empty()
            || !tls.ca_certificates.is_empty()
            || !tls.tls_certificates.is_empty()
            || !tls.credential_name.is_empty()
            || !tls.credential_names.is_empty())
    {
        v.warn(format!(
            "{mode} mode does not use certificates, they will be ignored"
        ));
    }
    let sources = [
        !tls.server_certificate.is_empty() && !tls.private_key.is_empty(),
        !tls.credential_name.is_empty(),
        !tls.credential_names.is_empty(),
        !tls.tls_certificates.is_empty(),
    ]
    .iter()
    .filter(|s| **s)
    .count();
    if sources > 1 {
        v.error("only one of credential_name, credential_names, server_certificate/private_key, tls_certificates should be specified");
    }
    let terminates = matches!(mode, "SIMPLE" | "MUTUAL" | "OPTIONAL_MUTUAL");
    if terminates && (!tls.credential_name.is_empty() || !tls.credential_names.is_empty()) {
        return;
    }
    if terminates {
        let prefix = if mode == "SIMPLE" {
            "SIMPLE TLS"
        } else {
            "MUTUAL TLS"
        };
        if mode != "SIMPLE" && tls.ca_certificates.is_empty() {
            v.error(format!("{prefix} requires a client CA bundle"));
        }
        if tls.tls_certificates.len() > 2 {
            v.warn(format!("{prefix} can support up to 2 server certificates"));
        }
        let single = [TlsCertificate {
            server_certificate: tls.server_certificate.clone(),
            private_key: tls.private_key.clone(),
        }];
        let certs: &[TlsCertificate] = if tls.tls_certificates.is_empty() {
            &single
        } else {
            &tls.tls_certificates
        };
        for cert in certs {
            if cert.server_certificate.is_empty() {
                v.error(format!("{prefix} requires a server certificate"));
            }
            if cert.private_key.is_empty() {
                v.error(format!("{prefix} requires a private key"));
            }
        }
    }
    if !tls.ca_crl.is_empty() {
        if !tls.credential_name.is_empty() {
            v.error("CRL is not supported with credentialName. CRL has to be specified in the credential");
        }
        if mode == "SIMPLE" {
            v.error("CRL is not supported with SIMPLE TLS");
        }
    }
}

/// `security.IsValidCipherSuite`: BoringSSL's names, `ALL`, or an expression (`-...`, `+...`).
fn valid_cipher_suite(cs: &str) -> bool {
    const VALID: &[&str] = &[
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-RSA-AES256-SHA",
        "AES128-GCM-SHA256",
        "AES256-GCM-SHA384",
        "AES128-SHA",
        "AES256-SHA",
        "DES-CBC3-SHA",
    ];
    match cs.chars().next() {
        None => true,
        _ if cs == "ALL" => true,
        Some(c) if !c.is_alphanumeric() => true,
        _ => VALID.contains(&cs),
    }
}

/// `agent.ValidateNamespaceSlashWildcardHostname` (gateway: `is_gateway`; sidecar egress: not).
pub fn namespace_slash_hostname(hostname: &str, is_gateway: bool) -> Vec<String> {
    let mut errs = Vec::new();
    let Some((ns, host)) = hostname.split_once('/') else {
        if is_gateway {
            return hostname_part(hostname, true);
        }
        errs.push("host must be of form namespace/dnsName".into());
        return errs;
    };
    if ns.is_empty() || host.is_empty() {
        errs.push("config namespace and dnsName in host entry cannot be empty".into());
    }
    if !is_gateway {
        let bare = ns.strip_prefix('~').unwrap_or(ns);
        if !bare.is_empty() && bare != "*" && bare != "." && !is_dns1123_label(bare) {
            errs.push(format!("invalid namespace value {ns:?} in sidecar"));
        }
    } else if ns != "*" && ns != "." && !is_dns1123_label(ns) {
        errs.push(format!("invalid namespace value {ns:?} in gateway"));
    }
    errs.extend(hostname_part(host, is_gateway));
    errs
}

/// `validateSidecarOrGatewayHostnamePart`.
fn hostname_part(hostname: &str, is_gateway: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if hostname != "*" && !hostname.contains('.') {
        errs.push("short names (non FQDN) are not allowed".into());
    }
    if let Some(e) = validate_wildcard_domain(hostname) {
        if !is_gateway {
            errs.push(e.clone());
        }
        if !is_ip(hostname) {
            errs.push(e);
        }
    }
    if let Some(e) = super::schema_common::validate_partial_wildcard(hostname) {
        errs.push(e);
    }
    errs
}
