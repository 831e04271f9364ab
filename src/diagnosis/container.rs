//! Verdicts read off the container status alone, where neither the bootstrap nor istiod is
//! involved: the image cannot be pulled (istio-proxy's, or the init container's the pod waits
//! on), the proxy is killed for memory.

use super::*;

impl<'a> Builder<'a> {
    /// The proxy image cannot be pulled: the image reference, not the mesh.
    /// `container` is the one the kubelet cannot pull for: istio-proxy, or the init container
    /// the pod waits on (istio-init uses the proxy image too).
    pub(super) fn image_not_pulled(
        &mut self,
        container: &k8s_openapi::api::core::v1::Container,
        in_init: bool,
        reason: &str,
        message: Option<&str>,
    ) {
        let image = container.image.as_deref().unwrap_or_default();
        let name = &container.name;
        let whose = if name == sidecar::PROXY_CONTAINER {
            "its image".to_string()
        } else {
            format!(
                "init container {name} (which must finish before istio-proxy starts) uses image"
            )
        };
        let detail = match message.filter(|m| !m.is_empty()) {
            Some(m) => format!("{whose} {image}, which cannot be pulled ({reason}: {m})"),
            None => format!("{whose} {image}, which cannot be pulled ({reason})"),
        };
        let list = if in_init {
            "initContainers"
        } else {
            "containers"
        };
        self.set_verdict(
            VerdictKind::ImageNotPulled,
            "proxy image cannot be pulled",
            format!(
                "The sidecar never started: {detail}. The image reference, the registry or the pull credentials are wrong; the mesh itself is not involved."
            ),
        );
        self.findings.push(Finding::new(
            MD0108::message(self.full_name(), detail),
            Some(self.pod_ref()),
        ));
        self.next_steps.push(step(
            "Check the proxy image reference (the injector's global.proxy.image / hub / tag, or the sidecar.istio.io/proxyImage annotation)",
            self.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.{list}[?(@.name==\"{name}\")].image}}'",
                self.name
            )),
        ));
        self.next_steps.push(step(
            "See the kubelet's pull error and the pull secrets in the pod's events",
            self.kubectl(&format!("describe pod {}", self.name)),
        ));
    }

    /// istio-proxy is killed for memory: its limit, not its bootstrap.
    pub(super) fn out_of_memory(
        &mut self,
        t: &k8s_openapi::api::core::v1::ContainerStateTerminated,
    ) {
        let limit = self
            .pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .and_then(|p| p.container.resources.as_ref())
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"))
            .map(|q| q.0.clone());
        let detail = format!(
            "it is killed for using more memory than {} (OOMKilled, exit code {})",
            limit
                .as_deref()
                .map(|l| format!("its limit of {l}"))
                .unwrap_or_else(|| "the node allows (no memory limit)".to_string()),
            t.exit_code
        );
        self.set_verdict(
            VerdictKind::OutOfMemory,
            "proxy out of memory",
            format!(
                "istio-proxy keeps being killed: {detail}. Its bootstrap is not the problem; the proxy needs more memory than it is given, usually because it receives configuration for the whole mesh."
            ),
        );
        self.findings.push(Finding::new(
            MD0108::message(self.full_name(), detail),
            Some(self.pod_ref()),
        ));
        self.next_steps.push(step(
            "Raise the proxy's memory limit (annotation sidecar.istio.io/proxyMemoryLimit on the pod template, or the injector's global.proxy.resources); its current resources:",
            self.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.containers[?(@.name==\"istio-proxy\")].resources}}'",
                self.name
            )),
        ));
        self.next_steps.push(step(
            "Or send it less configuration: a Sidecar resource that limits the hosts its namespace imports",
            self.kubectl("get sidecars.networking.istio.io"),
        ));
    }
}
