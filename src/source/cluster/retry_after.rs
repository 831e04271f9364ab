//! The `Retry-After` header of a throttled answer, made visible to the retry loop.
//!
//! kube turns an error answer into its Status body and drops the headers, so a server (or a
//! proxy in front of it) that says when to come back only in `Retry-After` was retried on our
//! own schedule. A layer under the client copies the header's seconds into the Status's
//! `details.retryAfterSeconds` when the body has none; [`super::Cluster::request`] reads
//! that field.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use kube::client::{ClientBuilder, DynBody};
use serde_json::Value;

/// Error answers bigger than this are passed on untouched (a Status is a few hundred bytes).
const MAX_STATUS_BODY: usize = 64 * 1024;

/// The client, with the layer that carries `Retry-After` into the Status body.
/// Two, both with the layer: the one for requests, over HTTP/2 where the server speaks it
/// (`super::multiplexed`), and kube's own HTTP/1.1 client for upgrades (port-forward). With a
/// proxy configured both are kube's (which says which proxies this build supports).
pub fn build_clients(config: kube::Config) -> kube::Result<(kube::Client, kube::Client)> {
    let layer = tower::util::AndThenLayer::new(carry_retry_after);
    let upgrades = ClientBuilder::try_from(config.clone())?
        .with_layer(&layer)
        .build();
    if config.proxy_url.is_some() {
        return Ok((upgrades.clone(), upgrades));
    }
    let requests = ClientBuilder::new(
        super::multiplexed::service(&config)?,
        config.default_namespace.clone(),
    )
    .with_layer(&layer)
    .build();
    Ok((requests, upgrades))
}

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

fn carry_retry_after(
    response: Response<Box<DynBody>>,
) -> futures::future::BoxFuture<'static, Result<Response<Box<DynBody>>, BoxError>> {
    Box::pin(carry(response))
}

async fn carry(response: Response<Box<DynBody>>) -> Result<Response<Box<DynBody>>, BoxError> {
    let status = response.status();
    if !matches!(status.as_u16(), 429 | 503 | 504) {
        return Ok(response);
    }
    let Some(seconds) = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(retry_after_seconds)
    else {
        return Ok(response);
    };
    let (parts, body) = response.into_parts();
    let mut body = body;
    let mut buffer = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            buffer.extend_from_slice(&data);
            if buffer.len() > MAX_STATUS_BODY {
                return Err(format!(
                    "the server's HTTP {status} answer is over {MAX_STATUS_BODY} bytes"
                )
                .into());
            }
        }
    }
    let bytes = Bytes::from(buffer);
    let bytes = with_retry_hint(status, seconds, &bytes).map_or(bytes, Bytes::from);
    let body: Box<DynBody> = Box::new(Full::new(bytes).map_err(|never| match never {}));
    Ok(Response::from_parts(parts, body))
}

/// `Retry-After: <seconds>`; the HTTP-date form is not used by Kubernetes API servers.
fn retry_after_seconds(value: &HeaderValue) -> Option<u32> {
    value.to_str().ok()?.trim().parse().ok()
}

/// The Status body with `details.retryAfterSeconds` set from the header, when the body is a
/// Status without its own hint; `None` to keep the body as it is.
pub fn with_retry_hint(status: StatusCode, seconds: u32, body: &[u8]) -> Option<Vec<u8>> {
    if !matches!(status.as_u16(), 429 | 503 | 504) || seconds == 0 {
        return None;
    }
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object_mut()?;
    if object.get("kind").and_then(Value::as_str) != Some("Status") {
        return None;
    }
    let details = object
        .entry("details")
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()?;
    if details
        .get("retryAfterSeconds")
        .and_then(Value::as_u64)
        .is_some_and(|s| s > 0)
    {
        return None;
    }
    details.insert("retryAfterSeconds".into(), Value::from(seconds));
    serde_json::to_vec(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}"#;

    #[test]
    fn the_header_fills_a_status_without_a_hint() {
        let body = with_retry_hint(StatusCode::TOO_MANY_REQUESTS, 7, STATUS.as_bytes()).unwrap();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["details"]["retryAfterSeconds"], 7);
        assert_eq!(value["message"], "slow down");
        // kube then reads it as the Status's hint.
        let status: kube::core::Status = serde_json::from_slice(&body).unwrap();
        assert_eq!(status.details.unwrap().retry_after_seconds, 7);
    }

    #[test]
    fn the_body_s_own_hint_wins_and_other_answers_are_kept() {
        let with_hint = r#"{"kind":"Status","code":429,"details":{"retryAfterSeconds":2}}"#;
        assert!(with_retry_hint(StatusCode::TOO_MANY_REQUESTS, 7, with_hint.as_bytes()).is_none());
        assert!(with_retry_hint(StatusCode::INTERNAL_SERVER_ERROR, 7, STATUS.as_bytes()).is_none());
        assert!(with_retry_hint(StatusCode::TOO_MANY_REQUESTS, 7, b"not json").is_none());
        assert!(with_retry_hint(StatusCode::SERVICE_UNAVAILABLE, 0, STATUS.as_bytes()).is_none());
    }

    #[test]
    fn header_values() {
        assert_eq!(retry_after_seconds(&HeaderValue::from_static("5")), Some(5));
        assert_eq!(
            retry_after_seconds(&HeaderValue::from_static(" 12 ")),
            Some(12)
        );
        assert_eq!(
            retry_after_seconds(&HeaderValue::from_static("Wed, 21 Oct 2026 07:28:00 GMT")),
            None
        );
    }
}
