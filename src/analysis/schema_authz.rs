//! Istio's `ValidateAuthorizationPolicy` (`schema.ValidationAnalyzer.AuthorizationPolicy`), with
//! the address, port, value and attribute checks of Istio's `security` package, in Istio's
//! wording (IST0106 errors prefixed `invalid policy <name>.<namespace>:`, IST0133 warnings).

use std::net::IpAddr;

use super::Input;
use super::schema_security::{Validation, quote, target_refs, workload_selector};
use crate::findings::Finding;
use crate::istio::config::{AuthorizationPolicy, Source};

/// Istio's `security.ValidateIPs`: one error per bad address or range.
fn ips(values: &[String], errors: &mut Vec<String>) {
    for ip in values {
        match ip.split_once('/') {
            Some((addr, bits)) => {
                let parsed = addr.parse::<IpAddr>();
                let max = match parsed {
                    Ok(IpAddr::V4(_)) => 32,
                    _ => 128,
                };
                let reason = if parsed.is_err() {
                    Some(format!(
                        "netip.ParsePrefix({}): ParseAddr({}): unable to parse IP",
                        quote(ip),
                        quote(addr)
                    ))
                } else if bits.is_empty()
                    || !bits.bytes().all(|b| b.is_ascii_digit())
                    || (bits.len() > 1 && bits.starts_with('0'))
                {
                    Some(format!(
                        "netip.ParsePrefix({}): bad bits after slash: {}",
                        quote(ip),
                        quote(bits)
                    ))
                } else if bits.parse::<u32>().map_or(true, |b| b > max) {
                    Some(format!(
                        "netip.ParsePrefix({}): prefix length out of range",
                        quote(ip)
                    ))
                } else {
                    None
                };
                if let Some(reason) = reason {
                    errors.push(format!("bad CIDR range ({ip}): {reason}"));
                }
            }
            None => {
                // Go's parser takes an IPv6 zone (`fe80::1%eth0`).
                let addr = match ip.split_once('%') {
                    Some((a, zone)) if a.contains(':') && !zone.is_empty() => a,
                    _ => ip.as_str(),
                };
                if addr.parse::<IpAddr>().is_err() {
                    errors.push(format!("bad IP address ({ip})"));
                }
            }
        }
    }
}

/// Istio's `security.ValidatePorts`.
fn ports(values: &[String], errors: &mut Vec<String>) {
    for port in values {
        let reason = if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            Some(format!(
                "strconv.ParseUint: parsing {}: invalid syntax",
                quote(port)
            ))
        } else {
            match port.parse::<u32>() {
                Err(_) => Some(format!(
                    "strconv.ParseUint: parsing {}: value out of range",
                    quote(port)
                )),
                Ok(p) if p > 65535 => Some("<nil>".to_string()),
                Ok(_) => None,
            }
        };
        if let Some(reason) = reason {
            errors.push(format!("bad port ({port}): {reason}"));
        }
    }
}

fn empty_values(key: &str, values: &[String]) -> Option<String> {
    values
        .iter()
        .any(String::is_empty)
        .then(|| format!("empty value not allowed, found in {key}"))
}

fn wildcard_values(key: &str, values: &[String]) -> Option<String> {
    if let Some(e) = empty_values(key, values) {
        return Some(e);
    }
    for value in values {
        let count = value.matches('*').count();
        if count > 1 {
            return Some(format!(
                "at most one wildcard is allowed, found in {key}: {}",
                quote(value)
            ));
        }
        if count == 1 && value != "*" && !value.starts_with('*') && !value.ends_with('*') {
            return Some(format!(
                "wildcard is only allowed at the start or end, found in {key}: {}",
                quote(value)
            ));
        }
    }
    None
}

fn trust_domains(key: &str, values: &[String]) -> Option<String> {
    if let Some(e) = wildcard_values(key, values) {
        return Some(e);
    }
    values.iter().find(|v| v.contains('/')).map(|v| {
        format!(
            "trust domain must not contain '/', found in {key}: {}",
            quote(v)
        )
    })
}

fn service_accounts(key: &str, values: &[String]) -> Option<String> {
    if values.len() > 16 {
        return Some("may not have more than 16 values".into());
    }
    let format_hint = "expected format 'serviceAccount' or 'namespace/serviceAccount'";
    for value in values {
        if value.is_empty() {
            return Some(format!("empty value not allowed, found in {key}"));
        }
        if value.contains('*') {
            return Some(format!("wildcard not allowed, found in {key}"));
        }
        let slashes = value.matches('/').count();
        if slashes > 1 {
            return Some(format!("{format_hint}, found {} in {key}", quote(value)));
        }
        if value.len() > 320 {
            return Some(format!(
                "value cannot exceed 320 characters, found {} in {key}",
                quote(value)
            ));
        }
        if let Some((ns, sa)) = value.split_once('/') {
            if ns.is_empty() {
                return Some(format!(
                    "{format_hint}, found empty namespace {} in {key}",
                    quote(value)
                ));
            }
            if sa.is_empty() {
                return Some(format!(
                    "{format_hint}, found empty serviceAccount {} in {key}",
                    quote(value)
                ));
            }
        }
    }
    None
}

fn valid_literal(glob: &str) -> bool {
    !glob.is_empty()
        && glob
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()+,;:@=".contains(&b))
}

/// Istio's `security.CheckValidPathTemplate`.
fn path_templates(key: &str, paths: &[String]) -> Option<String> {
    for path in paths {
        let template = path.contains("{*}") || path.contains("{**}");
        let mut any_seen = false;
        let trimmed = path.trim_matches('/');
        for glob in trimmed.split('/') {
            let is_template = glob == "{*}" || glob == "{**}";
            if is_template && !any_seen {
                any_seen = glob == "{**}";
                continue;
            }
            if is_template {
                return Some(format!(
                    "invalid or unsupported path {trimmed}, found in {key}. {{**}} is not the last operator"
                ));
            }
            if glob.contains(['{', '}']) {
                return Some(format!(
                    "invalid or unsupported path {trimmed}, found in {key}. Contains '{{' or '}}' beyond a supported path template"
                ));
            }
            if template && !valid_literal(glob) {
                return Some(format!(
                    "invalid or unsupported path {trimmed}, found in {key}. Contains segment {glob} with invalid string literal"
                ));
            }
        }
    }
    None
}

fn map_key(key: &str) -> Result<(), String> {
    let open = key.find('[');
    match open {
        Some(open) if key.ends_with(']') && open > 0 && open + 2 < key.len() => Ok(()),
        _ => Err(format!("bad key ({key}): should have format a[b]")),
    }
}

/// Istio's `security.ValidateAttribute`.
fn attribute(key: &str, values: &[String]) -> Result<(), String> {
    if let Some(e) = empty_values(key, values) {
        return Err(e);
    }
    let ip_list = |values: &[String]| {
        let mut errors = Vec::new();
        ips(values, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(go_multierror(&errors))
        }
    };
    match key {
        k if k.starts_with("request.headers") => map_key(k),
        "source.ip" | "remote.ip" | "destination.ip" => ip_list(values),
        "source.serviceAccount" => service_accounts(key, values).map_or(Ok(()), Err),
        "source.trustDomain" => wildcard_values(key, values).map_or(Ok(()), Err),
        "source.namespace"
        | "source.principal"
        | "request.auth.principal"
        | "request.auth.audiences"
        | "request.auth.presenter"
        | "connection.sni" => Ok(()),
        k if k.starts_with("request.auth.claims") => map_key(k),
        "destination.port" => {
            let mut errors = Vec::new();
            ports(values, &mut errors);
            if errors.is_empty() {
                Ok(())
            } else {
                Err(go_multierror(&errors))
            }
        }
        k if k.starts_with("experimental.envoy.filters.") => map_key(k),
        "destination.namespace" => Err(format!(
            "attribute {key} is replaced by the metadata.namespace"
        )),
        k if k.starts_with("destination.labels") => Err(format!(
            "attribute {key} is replaced by the workload selector"
        )),
        "destination.name" | "destination.user" => Err(format!(
            "deprecated attribute {key}: only supported in v1alpha1"
        )),
        _ => Err(format!("unknown attribute: {key}")),
    }
}

/// How Go's multierror prints several errors inside another message.
fn go_multierror(errors: &[String]) -> String {
    let noun = if errors.len() == 1 { "error" } else { "errors" };
    let items: Vec<String> = errors.iter().map(|e| format!("\t* {e}")).collect();
    format!(
        "{} {noun} occurred:\n{}\n\n",
        errors.len(),
        items.join("\n")
    )
}

fn source_is_empty(s: &Source) -> bool {
    [
        &s.principals,
        &s.request_principals,
        &s.namespaces,
        &s.ip_blocks,
        &s.remote_ip_blocks,
        &s.not_principals,
        &s.not_request_principals,
        &s.not_namespaces,
        &s.not_ip_blocks,
        &s.not_remote_ip_blocks,
        &s.service_accounts,
        &s.not_service_accounts,
        &s.trust_domains,
        &s.not_trust_domains,
    ]
    .iter()
    .all(|l| l.is_empty())
}

fn authorization_policy(ap: &AuthorizationPolicy, name: &str, namespace: &str) -> Validation {
    let mut v = Validation::default();
    let mut errors: Vec<String> = Vec::new();
    let mut selector = Validation::default();
    target_refs(
        ap.selector.is_some(),
        ap.target_ref.as_ref(),
        &ap.target_refs,
        &mut selector,
    );
    workload_selector(ap.selector.as_ref(), &mut selector);
    errors.append(&mut selector.errors);
    v.warnings.append(&mut selector.warnings);
    let action = if ap.action.is_empty() {
        "ALLOW"
    } else {
        ap.action.as_str()
    };
    if action == "CUSTOM" {
        if ap.rules.is_empty() {
            errors.push("CUSTOM action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request".into());
        } else if ap.provider.as_ref().is_none_or(|p| p.name.is_empty()) {
            errors.push("`provider.name` must not be empty".into());
        }
        for rule in ap.rules.iter() {
            let unsupported =
                |name: &str| format!("{name} is currently not supported with CUSTOM action");
            for src in rule.from.iter().filter_map(|f| f.source.as_ref()) {
                for (list, name) in [
                    (&src.namespaces, "From.Namespaces"),
                    (&src.not_namespaces, "From.NotNamespaces"),
                    (&src.service_accounts, "From.ServiceAccounts"),
                    (&src.not_service_accounts, "From.NotServiceAccounts"),
                    (&src.trust_domains, "From.TrustDomains"),
                    (&src.not_trust_domains, "From.NotTrustDomains"),
                    (&src.principals, "From.Principals"),
                    (&src.not_principals, "From.NotPrincipals"),
                    (&src.request_principals, "From.RequestPrincipals"),
                    (&src.not_request_principals, "From.NotRequestPrincipals"),
                ] {
                    if !list.is_empty() {
                        errors.push(unsupported(name));
                    }
                }
            }
            for when in &rule.when {
                let k = when.key.as_str();
                if matches!(
                    k,
                    "source.namespace"
                        | "source.serviceAccount"
                        | "source.trustDomain"
                        | "source.principal"
                ) || k.starts_with("request.auth.")
                {
                    errors.push(unsupported(k));
                }
            }
        }
    }
    if ap.provider.is_some() && action != "CUSTOM" {
        errors.push(format!(
            "`provider` must not be with non CUSTOM action, found {action}"
        ));
    }
    if action == "DENY" && ap.rules.is_empty() {
        errors.push("DENY action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request".into());
    }
    for (i, rule) in ap.rules.iter().enumerate() {
        let (mut tcp_from, mut tcp_to, mut from_exists, mut to_exists) =
            (false, false, false, false);
        for from in &rule.from {
            let Some(src) = &from.source else {
                errors.push(format!("`from.source` must not be nil, found at rule {i}"));
                continue;
            };
            from_exists = true;
            if (src.principals.len()
                + src.not_principals.len()
                + src.namespaces.len()
                + src.not_namespaces.len()
                > 0)
                && (src.service_accounts.len() + src.not_service_accounts.len() > 0)
            {
                errors.push(format!(
                    "cannot set serviceAccounts with namespaces or principals, found at rule {i}"
                ));
            }
            if source_is_empty(src) {
                errors.push(format!(
                    "`from.source` must not be empty, found at rule {i}"
                ));
            }
            ips(&src.ip_blocks, &mut errors);
            ips(&src.not_ip_blocks, &mut errors);
            ips(&src.remote_ip_blocks, &mut errors);
            ips(&src.not_remote_ip_blocks, &mut errors);
            let checks = [
                empty_values("Principals", &src.principals),
                empty_values("RequestPrincipals", &src.request_principals),
                empty_values("Namespaces", &src.namespaces),
                service_accounts("ServiceAccounts", &src.service_accounts),
                trust_domains("TrustDomains", &src.trust_domains),
                empty_values("IpBlocks", &src.ip_blocks),
                empty_values("RemoteIpBlocks", &src.remote_ip_blocks),
                empty_values("NotPrincipals", &src.not_principals),
                empty_values("NotRequestPrincipals", &src.not_request_principals),
                empty_values("NotNamespaces", &src.not_namespaces),
                service_accounts("NotServiceAccounts", &src.not_service_accounts),
                trust_domains("NotTrustDomains", &src.not_trust_domains),
                empty_values("NotIpBlocks", &src.not_ip_blocks),
                empty_values("NotRemoteIpBlocks", &src.not_remote_ip_blocks),
            ];
            errors.extend(checks.into_iter().flatten());
            let l4 = [
                &src.not_principals,
                &src.principals,
                &src.ip_blocks,
                &src.not_ip_blocks,
                &src.namespaces,
                &src.not_namespaces,
                &src.remote_ip_blocks,
                &src.not_remote_ip_blocks,
                &src.service_accounts,
                &src.not_service_accounts,
            ];
            if l4.iter().any(|l| !l.is_empty()) {
                tcp_from = true;
            }
        }
        for to in &rule.to {
            let Some(op) = &to.operation else {
                errors.push(format!("`to.operation` must not be nil, found at rule {i}"));
                continue;
            };
            to_exists = true;
            let lists = [
                &op.ports,
                &op.methods,
                &op.paths,
                &op.hosts,
                &op.not_ports,
                &op.not_methods,
                &op.not_paths,
                &op.not_hosts,
            ];
            if lists.iter().all(|l| l.is_empty()) {
                errors.push(format!(
                    "`to.operation` must not be empty, found at rule {i}"
                ));
            }
            ports(&op.ports, &mut errors);
            ports(&op.not_ports, &mut errors);
            let checks = [
                empty_values("Ports", &op.ports),
                empty_values("Methods", &op.methods),
                empty_values("Paths", &op.paths),
                empty_values("Hosts", &op.hosts),
                empty_values("NotPorts", &op.not_ports),
                empty_values("NotMethods", &op.not_methods),
                empty_values("NotPaths", &op.not_paths),
                empty_values("NotHosts", &op.not_hosts),
                path_templates("Paths", &op.paths),
                path_templates("NotPaths", &op.not_paths),
            ];
            errors.extend(checks.into_iter().flatten());
            if !op.ports.is_empty() || !op.not_ports.is_empty() {
                tcp_to = true;
            }
        }
        for condition in rule.when.iter() {
            let key = &condition.key;
            if key.is_empty() {
                errors.push("`key` must not be empty".into());
            } else if condition.values.is_empty() && condition.not_values.is_empty() {
                errors.push(format!(
                    "at least one of `values` or `notValues` must be set for key {key}"
                ));
            } else {
                if let Err(e) = attribute(key, &condition.values) {
                    errors.push(format!("invalid `value` for `key` {key}: {e}"));
                }
                if let Err(e) = attribute(key, &condition.not_values) {
                    errors.push(format!("invalid `notValue` for `key` {key}: {e}"));
                }
            }
        }
        if ((from_exists && !to_exists && !tcp_from) || (to_exists && !tcp_to)) && action == "DENY"
        {
            v.warn("configured AuthorizationPolicy will deny all traffic to TCP ports under its scope due to the use of only HTTP attributes in a DENY rule; it is recommended to explicitly specify the port");
        }
    }
    // Istio prefixes every error with the policy's name.
    v.errors = errors
        .into_iter()
        .map(|e| format!("invalid policy {name}.{namespace}: {e}"))
        .collect();
    v
}

/// `schema.ValidationAnalyzer.AuthorizationPolicy`.
pub fn authorization_policies(input: &Input, out: &mut Vec<Finding>) {
    for ap in &input.config.authorization_policies {
        authorization_policy(&ap.spec, ap.name(), ap.namespace()).report(ap.resource, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(yaml: &str) -> Validation {
        let spec: AuthorizationPolicy = serde_json::from_str(yaml).unwrap();
        authorization_policy(&spec, "p", "ns")
    }

    #[test]
    fn deny_without_rules_and_bad_values() {
        let v = ap(r#"{"action":"DENY"}"#);
        assert_eq!(
            v.errors,
            vec![
                "invalid policy p.ns: DENY action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request"
            ]
        );
        let v = ap(
            r#"{"rules":[{"from":[{"source":{"ipBlocks":["10.0.0.0/33","1.2.3"]}}],"to":[{"operation":{"ports":["80","70000","x"]}}]}]}"#,
        );
        assert_eq!(
            v.errors,
            vec![
                "invalid policy p.ns: bad CIDR range (10.0.0.0/33): netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range",
                "invalid policy p.ns: bad IP address (1.2.3)",
                "invalid policy p.ns: bad port (70000): <nil>",
                "invalid policy p.ns: bad port (x): strconv.ParseUint: parsing \"x\": invalid syntax",
            ]
        );
    }

    #[test]
    fn deny_with_only_http_attributes_warns() {
        let v = ap(r#"{"action":"DENY","rules":[{"to":[{"operation":{"methods":["GET"]}}]}]}"#);
        assert!(v.errors.is_empty());
        assert_eq!(v.warnings.len(), 1);
    }

    #[test]
    fn conditions_are_checked_as_istio() {
        let v = ap(
            r#"{"rules":[{"when":[{"key":"request.auth.claims","values":["a"]},{"key":"foo","values":["a"]},{"key":"source.ip"}]}]}"#,
        );
        assert_eq!(
            v.errors,
            vec![
                "invalid policy p.ns: invalid `value` for `key` request.auth.claims: bad key (request.auth.claims): should have format a[b]",
                // Istio checks the key again for the (empty) `notValues`.
                "invalid policy p.ns: invalid `notValue` for `key` request.auth.claims: bad key (request.auth.claims): should have format a[b]",
                "invalid policy p.ns: invalid `value` for `key` foo: unknown attribute: foo",
                "invalid policy p.ns: invalid `notValue` for `key` foo: unknown attribute: foo",
                "invalid policy p.ns: at least one of `values` or `notValues` must be set for key source.ip",
            ]
        );
    }

    #[test]
    fn path_templates_follow_istio() {
        assert!(path_templates("Paths", &["/a/{*}/b".into()]).is_none());
        assert!(path_templates("Paths", &["/a/{**}/{*}".into()]).is_some());
        assert!(path_templates("Paths", &["/a/{x}".into()]).is_some());
    }
}
