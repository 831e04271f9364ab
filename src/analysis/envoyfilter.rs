//! Istio's `envoyfilter.EnvoyPatchAnalyzer`: patch operations that Envoy ignores for their
//! `applyTo` (IST0152, IST0153, IST0154) and relative operations without a priority (IST0151,
//! IST0155 when a filter of the same name also sets `proxyVersion`).

use serde_json::Value;

use super::Input;
use crate::findings::messages::{self, Message};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{EnvoyFilter, Typed};

/// The name a patch is about: its value's `name`, else the filter it matches on.
fn instance_name(patch: &crate::istio::config::EnvoyConfigPatch) -> String {
    let Some(Value::Object(value)) = patch.patch.as_ref().and_then(|p| p.value.as_ref()) else {
        return String::new();
    };
    if let Some(name) = value.get("name") {
        return format!("value:{name}");
    }
    patch
        .matches
        .as_ref()
        .and_then(|m| m.pointer("/listener/filterChain/filter/name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn report(ef: &Typed<EnvoyFilter>, index: usize, message: Message, out: &mut Vec<Finding>) {
    out.push(Finding::new(
        message,
        Some(ResourceRef::of(ef.resource).at_field(
            ef.resource,
            &format!("spec.configPatches[{index}].patch.value"),
        )),
    ));
}

/// `envoyfilter.EnvoyPatchAnalyzer`.
pub fn patches(input: &Input, out: &mut Vec<Finding>) {
    let mut filters: Vec<&Typed<EnvoyFilter>> = input.config.envoy_filters.iter().collect();
    filters.sort_by_key(|f| (f.namespace().to_string(), f.name().to_string()));
    // Names of patches whose match sets a proxyVersion, in the order Istio meets them.
    let mut versioned: Vec<String> = Vec::new();
    for ef in filters {
        for (index, patch) in ef.spec.config_patches.iter().enumerate() {
            let Some(p) = &patch.patch else { break };
            let name = instance_name(patch);
            let route = matches!(
                patch.apply_to.as_str(),
                "ROUTE_CONFIGURATION" | "HTTP_ROUTE"
            );
            let relative = |out: &mut Vec<Finding>| {
                if ef.spec.priority == 0 {
                    let message = if versioned.contains(&name) {
                        messages::IST0155::message()
                    } else {
                        messages::IST0151::message()
                    };
                    report(ef, index, message, out);
                }
            };
            match p.operation.as_str() {
                "ADD" if route => report(ef, index, messages::IST0153::message(), out),
                "REMOVE" if route => report(ef, index, messages::IST0154::message(), out),
                "REMOVE" => relative(out),
                "REPLACE"
                    if !matches!(
                        patch.apply_to.as_str(),
                        "NETWORK_FILTER" | "HTTP_FILTER" | "VIRTUAL_HOST"
                    ) =>
                {
                    report(ef, index, messages::IST0152::message(), out)
                }
                "REPLACE" | "INSERT_BEFORE" | "INSERT_AFTER" => relative(out),
                _ => {}
            }
            let has_version = patch
                .matches
                .as_ref()
                .and_then(|m| m.pointer("/proxy/proxyVersion"))
                .and_then(Value::as_str)
                .is_some_and(|v| !v.is_empty());
            if has_version {
                versioned.push(name);
            }
        }
    }
}
