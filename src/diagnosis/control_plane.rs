//! The causes checked around the proxy: istiod's endpoints and discovery address, the
//! NetworkPolicies between the pod and istiod, the root certificate, the token audience.

use super::*;
use crate::kube::netpol::{Allow, Destination, ports_allow};

impl<'a> Builder<'a> {
    /// The probable causes of a proxy that cannot get its configuration.
    pub(super) fn control_plane_checks(&mut self) {
        self.check_discovery_address();
        self.check_istiod_endpoints();
        self.check_network_policies();
        self.check_root_cert();
        self.check_token_audience();
        for m in self.log_matches(Family::ControlPlane) {
            if matches!(
                m.signature,
                Signature::Certificate | Signature::Token | Signature::Authentication
            ) {
                self.checks.push(check(
                    "The proxy's credentials are accepted",
                    CheckStatus::Fail,
                    format!("{}: {}", m.signature.explain(), m.excerpt),
                ));
            }
        }
    }

    /// The revision the pod belongs to (`istio.io/rev` on the pod or its namespace).
    pub(super) fn revision(&self) -> Option<String> {
        self.pod
            .label(REVISION_LABEL)
            .map(str::to_string)
            .or_else(|| {
                self.ctx
                    .namespace
                    .found()
                    .and_then(|n| n.label(REVISION_LABEL))
                    .map(str::to_string)
            })
            .filter(|r| !r.is_empty() && r != "default")
    }

    pub(super) fn istiod_slices(&self) -> Option<(String, Vec<&'a EndpointSlice>)> {
        let slices = self.ctx.istio_endpoint_slices.found()?;
        let service_of =
            |s: &EndpointSlice| s.label("kubernetes.io/service-name").map(str::to_string);
        let mut names = Vec::new();
        if let Some(rev) = self.revision() {
            names.push(format!("istiod-{rev}"));
        }
        names.push("istiod".to_string());
        for name in names {
            let matching: Vec<&EndpointSlice> = slices
                .iter()
                .filter(|s| service_of(s).as_deref() == Some(name.as_str()))
                .collect();
            if !matching.is_empty() {
                return Some((name, matching));
            }
        }
        None
    }

    /// istiod endpoint IPs (ready or not), for NetworkPolicy ipBlocks.
    pub(super) fn istiod_addresses(&self) -> Vec<IpAddr> {
        self.istiod_slices()
            .map(|(_, slices)| {
                slices
                    .iter()
                    .flat_map(|s| s.endpoints.iter())
                    .flat_map(|e| e.addresses.iter())
                    .filter_map(|a| a.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True when an injection webhook calling istiod (or istiod-<rev>) fails closed.
    pub(super) fn istiod_webhook_fails_closed(&self) -> bool {
        let Some(configs) = self.ctx.webhooks.found() else {
            return false;
        };
        configs
            .iter()
            .flat_map(|c| c.object.webhooks.iter().flatten())
            .filter(|w| injection::is_injection_webhook(w))
            .filter(|w| w.failure_policy.as_deref().is_none_or(|p| p == "Fail"))
            .filter_map(|w| w.client_config.service.as_ref())
            .any(|s| s.namespace == ISTIO_NAMESPACE && s.name.starts_with("istiod"))
    }

    /// The names of istiod's pods that are Running and ready.
    pub(super) fn ready_istiod_pods(&self) -> Vec<String> {
        self.ctx
            .istiod_pods
            .found()
            .into_iter()
            .flatten()
            .filter(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.status.as_ref().is_some_and(|s| {
                        s.phase.as_deref() == Some("Running")
                            && s.conditions
                                .iter()
                                .flatten()
                                .any(|c| c.type_ == "Ready" && c.status == "True")
                    })
            })
            .map(|p| p.name().to_string())
            .collect()
    }

    /// The discovery address the proxy should use: the pod's `proxy.istio.io/config`, else the
    /// mesh config's `defaultConfig`, else Istio's default for the revision.
    pub(super) fn expected_discovery_address(&self) -> String {
        fn discovery(yaml: &str) -> Option<String> {
            let doc = crate::formats::yaml::parse_stream(yaml)
                .ok()?
                .into_iter()
                .next()?;
            doc.value
                .get("discoveryAddress")?
                .as_str()
                .map(str::to_string)
        }
        if let Some(a) = self
            .pod
            .annotation("proxy.istio.io/config")
            .and_then(discovery)
        {
            return a;
        }
        let mesh = self
            .ctx
            .mesh_config
            .found()
            .and_then(|cm| cm.data.as_ref()?.get("mesh").cloned())
            .and_then(|mesh| {
                let doc = crate::formats::yaml::parse_stream(&mesh)
                    .ok()?
                    .into_iter()
                    .next()?;
                doc.value
                    .pointer("/defaultConfig/discoveryAddress")?
                    .as_str()
                    .map(str::to_string)
            });
        mesh.unwrap_or_else(|| match self.revision() {
            Some(rev) => format!("istiod-{rev}.{ISTIO_NAMESPACE}.svc:{XDS_PORT}"),
            None => format!("istiod.{ISTIO_NAMESPACE}.svc:{XDS_PORT}"),
        })
    }

    /// Is the address the bootstrap's ADS cluster dials istiod's? A unix socket is pilot-agent's
    /// local xDS proxy (which dials the discovery address itself).
    pub(super) fn check_discovery_address(&mut self) {
        const NAME: &str = "the proxy's discovery address is istiod's";
        let Some(bootstrap) = self.probe.and_then(|p| p.admin.bootstrap.ok()) else {
            return;
        };
        let Some(ads) = bootstrap.ads_cluster.as_deref() else {
            return;
        };
        let Some(cluster) = bootstrap.static_cluster(ads) else {
            return;
        };
        if cluster.addresses.is_empty() {
            return;
        }
        let expected = self.expected_discovery_address();
        if cluster.addresses.iter().any(|a| a.starts_with("unix:")) {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "ADS cluster {ads} goes through pilot-agent's local xDS proxy ({}); pilot-agent dials {expected}",
                    cluster.addresses.join(", ")
                ),
            ));
            return;
        }
        let split = |a: &str| -> (String, String) {
            match a.rsplit_once(':') {
                Some((h, p)) => (
                    h.trim_start_matches('[').trim_end_matches(']').to_string(),
                    p.to_string(),
                ),
                None => (a.to_string(), String::new()),
            }
        };
        let (_, expected_port) = split(&expected);
        let mut istiod_ips: Vec<IpAddr> = self.istiod_addresses();
        for p in self.ctx.istiod_pods.found().into_iter().flatten() {
            if let Some(ip) = p
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .and_then(|ip| ip.parse().ok())
            {
                istiod_ips.push(ip);
            }
        }
        let istiod_ports = [expected_port.clone(), "15010".into(), XDS_PORT.to_string()];
        let wrong: Vec<&String> = cluster
            .addresses
            .iter()
            // The port decides: a host can be a DNS alias, a Service IP or a pod IP of istiod,
            // but an address on none of istiod's xDS ports (15012, 15010, the configured one)
            // cannot be istiod. An IP that is istiod's pod IP is accepted on any istiod port.
            .filter(|a| {
                let (_, port) = split(a);
                !(a.as_str() == expected || istiod_ports.contains(&port))
            })
            .collect();
        if wrong.is_empty() {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "ADS cluster {ads} -> {} (istiod: {expected})",
                    cluster.addresses.join(", ")
                ),
            ));
            return;
        }
        let wrong_text = wrong
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let mut istiod = format!("istiod is {expected}");
        if !istiod_ips.is_empty() {
            let ips: Vec<String> = istiod_ips.iter().map(ToString::to_string).collect();
            istiod.push_str(&format!(", its pods {}", ips.join(", ")));
        }
        self.checks.push(check(
            NAME,
            CheckStatus::Fail,
            format!("ADS cluster {ads} -> {wrong_text}, but {istiod}"),
        ));
        self.findings.push(Finding::new(
            MD0109::message(self.full_name(), wrong_text.clone(), istiod),
            Some(self.pod_ref()),
        ));
        self.next_steps.push(step(
            format!(
                "Point the proxy back at istiod ({expected}): {wrong_text} comes from its bootstrap (a sidecar.istio.io/bootstrapOverride ConfigMap, the proxy.istio.io/config annotation's discoveryAddress, or the mesh config's defaultConfig.discoveryAddress); see which"
            ),
            Some(format!(
                "kubectl mesh-doctor bootstrap explain {} -n {}",
                self.name, self.namespace
            )),
        ));
    }

    pub(super) fn check_istiod_endpoints(&mut self) {
        const NAME: &str = "istiod has ready endpoints";
        let c = match (&self.ctx.istio_endpoint_slices, self.istiod_slices()) {
            (Lookup::Unknown(reason), _) => check(
                NAME,
                CheckStatus::Unknown,
                format!("EndpointSlices in {ISTIO_NAMESPACE} could not be listed: {reason}"),
            ),
            (_, None) if !self.ready_istiod_pods().is_empty() => check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "istiod pod(s) {} Running and ready (no EndpointSlice of Service istiod in {ISTIO_NAMESPACE} lists them)",
                    self.ready_istiod_pods().join(", ")
                ),
            ),
            (_, None) => check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "no EndpointSlice for Service istiod{} in {ISTIO_NAMESPACE} and no ready istiod pod: istiod is not installed there, or its Service is gone",
                    self.revision()
                        .map(|r| format!(" (or istiod-{r})"))
                        .unwrap_or_default()
                ),
            ),
            (_, Some((service, slices))) => {
                let endpoints: Vec<_> = slices.iter().flat_map(|s| s.endpoints.iter()).collect();
                let ready = endpoints
                    .iter()
                    .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
                    .count();
                if ready > 0 {
                    check(
                        NAME,
                        CheckStatus::Pass,
                        format!(
                            "Service {service} has {ready} ready endpoint(s) of {}",
                            endpoints.len()
                        ),
                    )
                } else {
                    check(
                        NAME,
                        CheckStatus::Fail,
                        format!(
                            "Service {service} has no ready endpoint ({} not ready): no istiod pod can answer",
                            endpoints.len()
                        ),
                    )
                }
            }
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                "Bring istiod back: see why its pods are not ready",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} describe pods -l app=istiod"
                )),
            ));
            if self.istiod_webhook_fails_closed() {
                self.next_steps.push(step(
                    "Until then no new pod can be created where its injection webhook applies (failurePolicy Fail, MD0202); list those namespaces",
                    Some("kubectl mesh-doctor analyze -A --analyzer webhook-endpoints".to_string()),
                ));
            }
        }
        self.checks.push(c);
    }

    pub(super) fn check_network_policies(&mut self) {
        const NAME: &str = "no NetworkPolicy blocks egress to istiod (TCP 15012)";
        let policies = match &self.ctx.network_policies {
            Lookup::Unknown(reason) => {
                self.checks.push(check(
                    NAME,
                    CheckStatus::Unknown,
                    format!(
                        "NetworkPolicies in {} could not be listed: {reason}",
                        self.namespace
                    ),
                ));
                return;
            }
            Lookup::Missing => Vec::new(),
            Lookup::Found(p) => p.iter().collect::<Vec<_>>(),
        };
        let empty = BTreeMap::new();
        let pod_labels = self.pod.metadata.labels.as_ref().unwrap_or(&empty);
        let applying: Vec<&NetworkPolicy> = policies
            .into_iter()
            .filter(|p| {
                let Some(spec) = p.spec.as_ref() else {
                    return false;
                };
                let egress_type = match &spec.policy_types {
                    Some(types) => types.iter().any(|t| t == "Egress"),
                    None => spec.egress.is_some(),
                };
                egress_type && selector::matches(spec.pod_selector.as_ref(), pod_labels)
            })
            .collect();
        if applying.is_empty() {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "no NetworkPolicy in {} restricts this pod's egress",
                    self.namespace
                ),
            ));
            return;
        }
        let names: Vec<String> = applying.iter().map(|p| p.name().to_string()).collect();
        let istio_labels = match &self.ctx.istio_namespace {
            Lookup::Found(ns) => ns.metadata.labels.clone().unwrap_or_default(),
            _ => BTreeMap::new(),
        };
        let mut istio_labels = istio_labels;
        istio_labels
            .entry("kubernetes.io/metadata.name".to_string())
            .or_insert_with(|| ISTIO_NAMESPACE.to_string());
        let addresses = self.istiod_addresses();
        let istiod_pod: BTreeMap<String, String> = ISTIOD_POD_LABELS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let target = Destination {
            policy_namespace: &self.namespace,
            namespace: ISTIO_NAMESPACE,
            namespace_labels: &istio_labels,
            pod_labels: &istiod_pod,
            addresses: &addresses,
        };
        let mut xds = Allow::No;
        let mut dns = Allow::No;
        let mut allowed_by = None;
        for policy in &applying {
            for rule in policy
                .spec
                .as_ref()
                .and_then(|s| s.egress.as_ref())
                .into_iter()
                .flatten()
            {
                let to_istiod = target.peers(rule.to.as_deref());
                let port = ports_allow(rule.ports.as_deref(), XDS_PORT, "TCP");
                let allow = to_istiod.and(port);
                if allow > xds {
                    xds = allow;
                    if allow == Allow::Yes {
                        allowed_by = Some(policy.name().to_string());
                    }
                }
                let dns_port = ports_allow(rule.ports.as_deref(), 53, "UDP").or(ports_allow(
                    rule.ports.as_deref(),
                    53,
                    "TCP",
                ));
                dns = dns.or(dns_port);
            }
        }
        let dns_note = if dns == Allow::No {
            "; DNS (port 53) is blocked too, so istiod's name cannot be resolved"
        } else {
            ""
        };
        let c = match xds {
            Allow::Yes => check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "NetworkPolicy {} allows egress to istiod on 15012{dns_note}",
                    allowed_by.unwrap_or_default()
                ),
            ),
            Allow::Maybe => check(
                NAME,
                CheckStatus::Unknown,
                format!(
                    "NetworkPolicy {} restricts egress; its rules allow 15012 only through a named port or an IP block mesh-doctor cannot match to istiod{dns_note}",
                    names.join(", ")
                ),
            ),
            Allow::No => check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "NetworkPolicy {} selects this pod for egress and no rule allows TCP 15012 to istiod in {ISTIO_NAMESPACE}{dns_note}",
                    names.join(", ")
                ),
            ),
        };
        if c.status != CheckStatus::Pass {
            self.next_steps.push(step(
                format!(
                    "Allow egress from the pod to namespace {ISTIO_NAMESPACE} on TCP 15012 (and to DNS on 53) in the NetworkPolicy"
                ),
                self.kubectl(&format!("get networkpolicy {} -o yaml", names.join(" "))),
            ));
        }
        self.checks.push(c);
    }

    pub(super) fn check_root_cert(&mut self) {
        let name = format!(
            "ConfigMap {ROOT_CERT_CONFIG_MAP} exists in {}",
            self.namespace
        );
        let c = match &self.ctx.root_cert {
            Lookup::Found(cm) => {
                let has_cert = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("root-cert.pem"))
                    .is_some_and(|v| !v.trim().is_empty());
                if has_cert {
                    check(&name, CheckStatus::Pass, "it holds root-cert.pem")
                } else {
                    check(
                        &name,
                        CheckStatus::Fail,
                        "it exists but has no root-cert.pem: the proxy cannot verify istiod",
                    )
                }
            }
            Lookup::Missing => check(
                &name,
                CheckStatus::Fail,
                "missing: istiod writes it into every namespace it watches; without it the proxy's istiod-ca-cert volume cannot be mounted and it cannot verify istiod",
            ),
            Lookup::Unknown(reason) => check(
                &name,
                CheckStatus::Unknown,
                format!("could not be read: {reason}"),
            ),
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                format!(
                    "Find out why istiod does not write {ROOT_CERT_CONFIG_MAP} into {} (discoverySelectors, or istiod not running)",
                    self.namespace
                ),
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod | grep -i {ROOT_CERT_CONFIG_MAP}"
                )),
            ));
        }
        self.checks.push(c);
    }

    pub(super) fn check_token_audience(&mut self) {
        const NAME: &str = "the istio-token audience is istio-ca";
        let volume = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .and_then(|v| v.iter().find(|v| v.name == "istio-token"));
        let audiences: Vec<String> = volume
            .and_then(|v| v.projected.as_ref())
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|s| s.service_account_token.as_ref())
            .map(|t| t.audience.clone().unwrap_or_default())
            .collect();
        let c = if volume.is_none() {
            check(
                NAME,
                CheckStatus::Skipped,
                "the pod has no istio-token volume (it presents its default service-account token)",
            )
        } else if audiences.iter().any(|a| a == TOKEN_AUDIENCE) {
            check(
                NAME,
                CheckStatus::Pass,
                format!("audience {TOKEN_AUDIENCE}"),
            )
        } else {
            check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "the token's audience is {:?}, istiod expects {TOKEN_AUDIENCE}: it rejects the proxy's certificate request",
                    audiences
                ),
            )
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                "Fix the audience in the injection template (values.global.sds.token.aud) or istiod's TOKEN_AUDIENCES, then restart the pod",
                None,
            ));
        }
        self.checks.push(c);
    }

    // ------------------------------------------------------------------ live
}
