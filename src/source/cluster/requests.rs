//! Requests to a connected cluster: each one bounded by the request timeout and the command's
//! deadline and retried when the server throttles it, and the one way to list a kind page by
//! page ([`Cluster::paginate`]) with its limits (a repeated continue token, 20,000 pages).

use std::fmt::Debug;
use std::time::Duration;

use kube::api::{Api, ListParams, ObjectList};
use serde::de::DeserializeOwned;

use super::connection::Cluster;
use super::errors::{ListError, classify, shorten};
use crate::error::Error;
use crate::kube::snapshot::Located;

/// `--chunk-size`'s default: objects per list request. kubectl asks for 500. On the benchmark
/// cluster (5,000 Pods, 5,000 Services, 2,000 of each Istio kind), 2,000 read in a third less
/// time than 500, and 5,000 (each list in one page there) 8 % less again, for 4 % more memory:
/// every page after the first costs the API server more than the objects in it
/// (docs/performance.md, after the live benchmark).
pub const DEFAULT_CHUNK_SIZE: u32 = 5000;

/// `Pod` for `k8s_openapi::api::core::v1::Pod` (and for a wrapper of it, such as
/// `Located<...::Pod>`): the kind a page holds, for the timeline.
fn short_type_name<X>() -> &'static str {
    let full = std::any::type_name::<X>().trim_end_matches('>');
    full.rsplit("::").next().unwrap_or(full)
}

/// Where a page's request tells its continue token as soon as the page has arrived, before the
/// page is decoded: [`Cluster::paginate`] asks for the next page meanwhile. A request that cannot
/// tell it early drops it; the token then comes from the decoded page.
pub type EarlyToken = tokio::sync::oneshot::Sender<Option<String>>;

/// [`Cluster::page`]: in protobuf for the kinds [`protobuf_kind`] knows, else in JSON.
async fn list_page<K>(
    client: kube::Client,
    url: String,
    params: ListParams,
    early: EarlyToken,
) -> kube::Result<ObjectList<K>>
where
    K: Clone + DeserializeOwned + Send + 'static,
{
    let request = kube::core::Request::new(url)
        .list(&params)
        .map_err(kube::Error::BuildRequest)?;
    match protobuf_kind::<K>() {
        Some(kind) => match list_page_protobuf(&client, request.clone(), kind, early).await? {
            Protobuf::Listed(page) => Ok(page),
            Protobuf::NotServed(early) => list_page_json(&client, request, early).await,
        },
        None => list_page_json(&client, request, early).await,
    }
}

/// [`list_page`] in JSON. The answer is read into one buffer, and `managedFields` are cut from
/// it in place: no second or third copy of a page of megabytes.
async fn list_page_json<K>(
    client: &kube::Client,
    mut request: http::Request<Vec<u8>>,
    early: EarlyToken,
) -> kube::Result<ObjectList<K>>
where
    K: Clone + DeserializeOwned,
{
    use http_body_util::BodyExt;
    request.extensions_mut().insert("list");
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    let text = String::from_utf8(Vec::from(body)).map_err(kube::Error::FromUtf8)?;
    if status.is_client_error() || status.is_server_error() {
        return Err(api_error(status, &text));
    }
    // Nobody waiting for it is no error.
    let _ = early.send(continue_token(&text));
    let text = crate::formats::json_members::cut_members(text, "managedFields");
    serde_json::from_str(&text).map_err(kube::Error::SerdeError)
}

/// An error answer as kube's client makes it: the server's `Status`, else its text as the
/// message, with the HTTP code.
fn api_error(status: http::StatusCode, text: &str) -> kube::Error {
    let status = serde_json::from_str::<kube::core::Status>(text).unwrap_or_else(|_| {
        kube::core::Status::failure(text.trim(), "Failed to parse error data")
            .with_code(status.as_u16())
    });
    kube::Error::Api(status.boxed())
}

/// The kinds listed in protobuf: the API server encodes them several times faster than JSON,
/// and they are most of a cluster's bytes (`formats::kube_protobuf`). Custom resources have no
/// protobuf form; ConfigMaps and webhook configurations hold bytes (base64 in JSON), which the
/// table leaves out.
fn protobuf_kind<K: 'static>() -> Option<crate::formats::kube_protobuf::Root> {
    use crate::formats::kube_protobuf_schema as schema;
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
    use k8s_openapi::api::batch::v1::CronJob;
    use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, Service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use std::any::TypeId;
    let kinds = [
        (TypeId::of::<Pod>(), schema::POD),
        (TypeId::of::<Service>(), schema::SERVICE),
        (TypeId::of::<Namespace>(), schema::NAMESPACE),
        (TypeId::of::<Node>(), schema::NODE),
        (TypeId::of::<Event>(), schema::EVENT),
        (TypeId::of::<Deployment>(), schema::DEPLOYMENT),
        (TypeId::of::<StatefulSet>(), schema::STATEFUL_SET),
        (TypeId::of::<DaemonSet>(), schema::DAEMON_SET),
        (TypeId::of::<CronJob>(), schema::CRON_JOB),
        (TypeId::of::<EndpointSlice>(), schema::ENDPOINT_SLICE),
        (TypeId::of::<NetworkPolicy>(), schema::NETWORK_POLICY),
        (
            TypeId::of::<PodDisruptionBudget>(),
            schema::POD_DISRUPTION_BUDGET,
        ),
    ];
    // The kinds `Cluster::list_located` decodes straight into the snapshot's objects.
    let located = [
        (TypeId::of::<Located<Pod>>(), schema::POD),
        (TypeId::of::<Located<Service>>(), schema::SERVICE),
    ];
    let id = TypeId::of::<K>();
    kinds
        .into_iter()
        .chain(located)
        .find(|(k, _)| *k == id)
        .map(|(_, root)| root)
}

/// What a protobuf request gave.
enum Protobuf<K: Clone> {
    Listed(ObjectList<K>),
    /// No protobuf list came back (an error status, a server or proxy that answers JSON): the
    /// page is asked for again in JSON, whose answer and errors are read as always.
    NotServed(EarlyToken),
}

/// Below this many objects per thread, a protobuf page is decoded on fewer threads (a thread
/// costs more than a few hundred objects).
const DECODED_PER_THREAD: usize = 1000;

/// A protobuf page's items, decoded in their order; a large page on all cores, in parts (the
/// last list's page is what the analysis waits for). The first item that does not decode is
/// the error.
fn decode_items<K: DeserializeOwned + Send>(
    raw: &[&[u8]],
    kind: crate::formats::kube_protobuf::Root,
) -> Result<Vec<K>, crate::formats::kube_protobuf::DecodeError> {
    let chunks = crate::parallel::parts(raw, DECODED_PER_THREAD);
    let decoded = crate::parallel::map(&chunks, |_, chunk| {
        chunk
            .iter()
            .map(|item| crate::formats::kube_protobuf::decode::<K>(item, kind))
            .collect::<Result<Vec<K>, _>>()
    });
    // Sized once: a page of Pods is megabytes, and growing it copies them.
    let mut items = Vec::with_capacity(raw.len());
    for part in decoded {
        items.append(&mut part?);
    }
    Ok(items)
}

/// The items of a protobuf list decoded while its answer arrived, and where each one was in it.
struct EarlyItems<K> {
    items: Vec<K>,
    at: Vec<std::ops::Range<usize>>,
}

impl<K> EarlyItems<K> {
    /// The items decoded early, when they are the first of the list's `items` (in `answer`);
    /// else none (the whole list is then decoded from its answer).
    fn first_of(self, answer: &[u8], items: &[&[u8]]) -> Vec<K> {
        let base = answer.as_ptr() as usize;
        let same = self.at.len() <= items.len()
            && self.at.iter().zip(items).all(|(at, item)| {
                (item.as_ptr() as usize).wrapping_sub(base) == at.start && item.len() == at.len()
            });
        if same { self.items } else { Vec::new() }
    }
}

/// Items decoded before this many have been seen give the size a list's items are reserved at.
const ITEMS_TO_ESTIMATE: usize = 16;
/// An answer's envelope may say it is longer; the buffer is not reserved beyond this at once.
const LARGEST_RESERVED: usize = 256 << 20;

/// Reads a protobuf answer whole, and when `decode` decodes its items as they arrive: the API
/// server writes a large list item by item, and decoding meanwhile leaves little to decode after
/// its last byte. An item that does not decode ends the early decoding (the list is then judged
/// whole, as it is without it).
async fn read_decoding<K, B>(
    mut body: B,
    kind: crate::formats::kube_protobuf::Root,
    decode: bool,
) -> kube::Result<(Vec<u8>, EarlyItems<K>)>
where
    K: DeserializeOwned,
    B: http_body::Body<Data = bytes::Bytes> + Unpin,
    kube::Error: From<B::Error>,
{
    use crate::formats::kube_protobuf;
    use http_body_util::BodyExt;
    let mut answer: Vec<u8> = Vec::new();
    let mut early = EarlyItems {
        items: Vec::new(),
        at: Vec::new(),
    };
    let mut scanner = crate::formats::kube_protobuf_items::ItemScanner::default();
    let mut decoding = decode;
    let mut reserved = false;
    let mut estimated = false;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        answer.extend_from_slice(&data);
        if !decoding {
            continue;
        }
        for at in scanner.complete_items(&answer) {
            match kube_protobuf::decode::<K>(&answer[at.clone()], kind) {
                Ok(item) => {
                    early.items.push(item);
                    early.at.push(at);
                }
                Err(_) => {
                    decoding = false;
                    break;
                }
            }
        }
        if !reserved && let Some(end) = scanner.list_end() {
            answer.reserve_exact(end.saturating_sub(answer.len()).min(LARGEST_RESERVED));
            reserved = true;
        }
        // A page of Pods is megabytes: its items are reserved once, from the first ones' size
        // (a frame brings several items: the count passes the threshold, it seldom lands on it).
        if !estimated
            && early.items.len() >= ITEMS_TO_ESTIMATE
            && let (Some(first), Some(last), Some(end)) =
                (early.at.first(), early.at.last(), scanner.list_end())
        {
            estimated = true;
            let each = (last.end - first.start) / early.at.len() + 1;
            // The envelope's length is the server's word: the room made stays bounded whatever
            // it claims (more items than that simply grow the list).
            let bytes = end.saturating_sub(first.start).min(LARGEST_RESERVED);
            let estimate = (bytes / each).min(LARGEST_RESERVED / std::mem::size_of::<K>().max(1));
            early
                .items
                .reserve_exact((estimate + estimate / 8).saturating_sub(early.items.len()));
        }
    }
    Ok((answer, early))
}

/// [`list_page`] in protobuf.
async fn list_page_protobuf<K>(
    client: &kube::Client,
    mut request: http::Request<Vec<u8>>,
    kind: crate::formats::kube_protobuf::Root,
    early: EarlyToken,
) -> kube::Result<Protobuf<K>>
where
    K: Clone + DeserializeOwned + Send,
{
    use crate::formats::kube_protobuf;
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(PROTOBUF),
    );
    request.extensions_mut().insert("list");
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status();
    let in_protobuf = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(PROTOBUF));
    if !in_protobuf {
        tracing::debug!(%status, "no protobuf list, asking for JSON");
        return Ok(Protobuf::NotServed(early));
    }
    let failed = status.is_client_error() || status.is_server_error();
    let (body, early_items) = read_decoding::<K, _>(response.into_body(), kind, !failed).await?;
    if failed {
        // The server's Status, in protobuf too: the error as the JSON one would be, without
        // asking a throttled or refusing server a second time.
        let decoded = kube_protobuf::object(&body).and_then(|raw| {
            kube_protobuf::decode::<kube::core::Status>(
                raw,
                crate::formats::kube_protobuf_schema::STATUS,
            )
        });
        return match decoded {
            Ok(answer) => Err(kube::Error::Api(answer.boxed())),
            Err(e) => {
                tracing::debug!(error = %e, %status, "protobuf Status not decoded, asking for JSON");
                Ok(Protobuf::NotServed(early))
            }
        };
    }
    // Not decodable here (a server's field of a wire type the table does not expect): the page
    // is read in JSON instead, so a gap in this decoder never costs a result.
    let not_decoded = |e: kube_protobuf::DecodeError, early| {
        tracing::debug!(error = %e, "protobuf list not decoded, asking for JSON");
        Ok(Protobuf::NotServed(early))
    };
    let list = match kube_protobuf::list(&body) {
        Ok(list) => list,
        Err(e) => return not_decoded(e, early),
    };
    let _ = early.send(list.continue_token.clone());
    // The items decoded while the answer arrived are the list's first ones (the same bytes, as
    // `list` found them); the others are decoded now.
    let mut items = early_items.first_of(&body, &list.items);
    match decode_items::<K>(&list.items[items.len()..], kind) {
        Ok(mut rest) => {
            items.reserve_exact(rest.len());
            items.append(&mut rest);
        }
        // The token was told already: the JSON page tells nobody.
        Err(e) => return not_decoded(e, tokio::sync::oneshot::channel().0),
    }
    Ok(Protobuf::Listed(ObjectList {
        types: Default::default(),
        metadata: kube::core::ListMeta {
            continue_: list.continue_token,
            resource_version: list.resource_version,
            remaining_item_count: list.remaining_item_count,
            self_link: None,
        },
        items,
    }))
}

/// The continue token of a list's answer, read from the list's `metadata` without decoding its
/// items: the API server writes `kind`, `apiVersion` and `metadata` before `items`, and the
/// text `"items":` can occur nowhere before (inside a JSON string, its quotes are escaped).
/// `None` when there is none, or when the answer does not start that way.
fn continue_token(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        metadata: kube::core::ListMeta,
    }
    let at = text.find("\"items\":")?;
    let head = text[..at].trim_end().strip_suffix(',')?;
    let head: Head = serde_json::from_str(&format!("{head}}}")).ok()?;
    head.metadata.continue_.filter(|t| !t.is_empty())
}

/// A spawned request: its answer when awaited; ended when dropped (a request given up at its
/// timeout does not go on in the background). A panic in it is the caller's panic.
struct Task<T>(tokio::task::JoinHandle<T>);

impl<T> std::future::Future for Task<T> {
    type Output = T;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<T> {
        std::pin::Pin::new(&mut self.0)
            .poll(cx)
            .map(|done| match done {
                Ok(value) => value,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            })
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A page asked for: its request, where it tells its continue token early, and when it was
/// asked (the timeline's time).
struct Ahead<X: Clone> {
    task: Task<kube::Result<ObjectList<X>>>,
    told: tokio::sync::oneshot::Receiver<Option<String>>,
    asked: std::time::Instant,
}

/// A list is abandoned after this many pages (10 million objects of a kind): a server that
/// never stops paginating cannot keep the command reading.
pub const MAX_PAGES: usize = 20_000;
/// At most this many objects' room is reserved on a server's word (`remainingItemCount`).
const MAX_RESERVED: usize = 100_000;
/// How many times a request the server throttles (429) or calls unavailable (503, 504) is tried.
pub const TRIES: u32 = 3;

/// A [`Cluster::paginate`] gathering: each item of a page turned by `keep` into what is kept
/// (`None`: not kept), added to the list. `left` is the server's count of objects after the page
/// (`remainingItemCount`), room for which is made at once: growing a list of thousands of
/// objects would copy them again and again.
pub fn mapped<X, T>(
    mut keep: impl FnMut(X) -> Option<T>,
) -> impl FnMut(&mut Vec<T>, Vec<X>, usize) {
    move |items, page, left| {
        items.reserve(page.len() + left.min(MAX_RESERVED));
        items.extend(page.into_iter().filter_map(&mut keep));
    }
}

/// A [`Cluster::paginate`] gathering of items kept as they were decoded: `keep` adjusts each
/// where it lies and says whether it stays. The first page becomes the list itself; the items
/// of a later one are appended.
pub fn in_place<X>(mut keep: impl FnMut(&mut X) -> bool) -> impl FnMut(&mut Vec<X>, Vec<X>, usize) {
    move |items, mut page, left| {
        page.retain_mut(&mut keep);
        if items.is_empty() {
            *items = page;
            items.reserve(left.min(MAX_RESERVED));
        } else {
            items.reserve(page.len() + left.min(MAX_RESERVED));
            items.append(&mut page);
        }
    }
}

impl Cluster {
    /// Lists every object of a kind in a scope (`None` = all namespaces or cluster-scoped),
    /// following `continue` tokens.
    pub async fn list<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.list_kept(namespace, Some).await
    }

    /// Lists what `params` selects (labels, fields) through `api`, following `continue` tokens.
    pub async fn list_selected<K>(
        &self,
        api: Api<K>,
        params: &ListParams,
    ) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        self.paginate_kept(api, params.clone(), Some).await
    }

    /// The API of a namespaced kind in a scope: one namespace, or all (`None`).
    fn api_in<K>(&self, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// Lists every object of a kind in a scope as [`Cluster::list`], turned by `keep` into what is
    /// kept (or dropped) page by page, as each page comes: thousands of Pods are not moved once
    /// more after the last page.
    pub async fn list_kept<K, T>(
        &self,
        namespace: Option<&str>,
        keep: impl FnMut(K) -> Option<T>,
    ) -> Result<Vec<T>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.paginate_kept(self.api_in(namespace), ListParams::default(), keep)
            .await
    }

    /// Lists every object of a kind in a scope as [`Cluster::list`], decoded straight into the
    /// snapshot's [`Located`] objects, each adjusted (its origin) and kept or dropped by `keep`
    /// where it lies: the objects of a page are never moved into another list. (Wrapping
    /// 5,000 decoded Pods afterwards copied 10 MB into fresh memory, 6-10 ms after the last
    /// byte of a live `analyze -A` on the benchmark cluster.)
    pub async fn list_located<K>(
        &self,
        namespace: Option<&str>,
        keep: impl FnMut(&mut Located<K>) -> bool,
    ) -> Result<Vec<Located<K>>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let api = self.api_in::<K>(namespace);
        self.paginate(
            &ListParams::default(),
            |params, early| self.page::<K, Located<K>>(&api, params, early),
            in_place(keep),
        )
        .await
    }

    /// Lists every object of a cluster-scoped kind.
    pub async fn list_cluster<K>(&self) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>,
    {
        self.paginate_kept(Api::all(self.client.clone()), ListParams::default(), Some)
            .await
    }

    /// Every page of `api`'s list, each item turned by `keep` into what is kept.
    async fn paginate_kept<K, T>(
        &self,
        api: Api<K>,
        base: ListParams,
        keep: impl FnMut(K) -> Option<T>,
    ) -> Result<Vec<T>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        self.paginate(
            &base,
            |params, early| self.page(&api, params, early),
            mapped(keep),
        )
        .await
    }

    /// The request for one page of `api`'s list, as [`Cluster::paginate`] takes it, decoded
    /// into `X` (`api`'s kind, or a type that reads only part of it) without the objects' `metadata.managedFields` (a third of a Pod's JSON, read by nothing
    /// here), which are cut from the text first and so cost neither decoding nor memory.
    pub fn page<K, X>(
        &self,
        api: &Api<K>,
        params: ListParams,
        early: EarlyToken,
    ) -> impl std::future::Future<Output = kube::Result<ObjectList<X>>> + Send + 'static
    where
        K: kube::Resource,
        X: Clone + DeserializeOwned + Send + 'static,
    {
        list_page::<X>(
            self.client.clone(),
            api.resource_url().to_string(),
            params,
            early,
        )
    }

    /// Lists page by page: `fetch` asks for one page with the given parameters (the base ones, a
    /// page size and the continue token), `gather` adds each page's items to the list's
    /// ([`mapped`], [`in_place`]), so a page's items can be reduced before the next page comes. Each page is fetched and decoded in a
    /// task of its own, so the pages of several lists are decoded on all cores, not one after
    /// the other on the thread that awaits them all; and the next page is asked for as soon as
    /// `fetch` tells the continue token through its [`EarlyToken`], while this one is decoded
    /// (used only when the decoded page has the same token). Ends with [`ListError::Failed`]
    /// when the server sends a continue token twice or more than [`MAX_PAGES`] pages; each
    /// request is bounded and retried by [`Cluster::request`].
    pub async fn paginate<X, T, F, Fut>(
        &self,
        base: &ListParams,
        fetch: F,
        mut gather: impl FnMut(&mut Vec<T>, Vec<X>, usize),
    ) -> Result<Vec<T>, ListError>
    where
        X: Clone + Send + 'static,
        F: Fn(ListParams, EarlyToken) -> Fut,
        Fut: std::future::Future<Output = kube::Result<ObjectList<X>>> + Send + 'static,
    {
        let params_for = |token: Option<&str>| {
            let mut params = base.clone();
            if self.chunk_size > 0 {
                params = params.limit(self.chunk_size);
            }
            if let Some(t) = token {
                params = params.continue_token(t);
            }
            params
        };
        let ask = |params: ListParams| {
            let (early, told) = tokio::sync::oneshot::channel();
            let task = Task(tokio::spawn(fetch(params, early)));
            Ahead {
                task,
                told,
                asked: std::time::Instant::now(),
            }
        };
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        // The next page, asked for before this one was decoded, with the token it was asked with.
        let mut ahead: Option<(String, Ahead<X>)> = None;
        for number in 0..MAX_PAGES {
            let params = params_for(token.as_deref());
            let this = match ahead.take() {
                Some((asked_with, page)) if token.as_ref() == Some(&asked_with) => page,
                _ => ask(params.clone()),
            };
            let Ahead {
                task,
                mut told,
                asked,
            } = this;
            // The first try is the request already made; a retry asks again.
            let mut first = Some(task);
            let request = self.request(|| first.take().unwrap_or_else(|| ask(params.clone()).task));
            tokio::pin!(request);
            let mut listening = true;
            let page = loop {
                tokio::select! {
                    page = &mut request => break page?,
                    next = &mut told, if listening => {
                        listening = false;
                        if let Ok(Some(next)) = next
                            && !seen.contains(&next)
                            && number + 1 < MAX_PAGES
                        {
                            let page = ask(params_for(Some(&next)));
                            ahead = Some((next, page));
                        }
                    }
                }
            };
            // The request timeline (`-vv`): which list waited how long, page by page.
            tracing::debug!(
                kind = short_type_name::<X>(),
                page = number,
                items = page.items.len(),
                ms = asked.elapsed().as_millis() as u64,
                "listed a page"
            );
            // Room for the rest of the list, when the server says how much is left: growing a
            // list of thousands of objects would copy them again and again.
            let left = page
                .metadata
                .remaining_item_count
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            gather(&mut items, page.items, left);
            match page.metadata.continue_ {
                Some(t) if !t.is_empty() => {
                    if !seen.insert(t.clone()) {
                        return Err(ListError::Failed(format!(
                            "the server's pagination does not end: it sent the continue token {:?} twice (after {} objects)",
                            shorten(&t),
                            items.len()
                        )));
                    }
                    token = Some(t);
                }
                _ => return Ok(items),
            }
        }
        Err(ListError::Failed(format!(
            "the server's pagination does not end: still more after {MAX_PAGES} pages ({} objects)",
            items.len()
        )))
    }

    /// One API request, bounded by the request timeout and the overall deadline, tried again
    /// (up to [`TRIES`] times) when the server throttles it (429) or is unavailable (503, 504).
    pub async fn request<T, F, Fut>(&self, mut call: F) -> Result<T, ListError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = kube::Result<T>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let (limit, by_deadline) = self.time_left();
            let result = match tokio::time::timeout(limit, call()).await {
                Ok(result) => result,
                Err(_) if by_deadline => return Err(self.deadline_passed()),
                Err(_) => {
                    return Err(ListError::Unreachable(format!(
                        "no answer within {} (--request-timeout)",
                        crate::formats::duration::show_duration(self.timeout)
                    )));
                }
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            let retryable =
                matches!(&error, kube::Error::Api(s) if matches!(s.code, 429 | 503 | 504));
            if !retryable || tries >= TRIES {
                let mut classified = classify(&error);
                if retryable && let ListError::Failed(text) = &mut classified {
                    text.push_str(&format!(", gave up after {tries} tries"));
                }
                return Err(classified);
            }
            // The server's hint (Status details.retryAfterSeconds), else 1s, 2s; never past a deadline.
            let hint = match &error {
                kube::Error::Api(s) => s
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|&s| s > 0),
                _ => None,
            };
            let wait = Duration::from_secs(hint.map_or(1 << (tries - 1), u64::from).min(10));
            let (left, by_deadline) = self.time_left();
            if wait >= left && by_deadline {
                return Err(self.deadline_passed());
            }
            tokio::time::sleep(wait.min(left)).await;
        }
    }

    /// The time a request may take: the request timeout, or less when the overall deadline is
    /// nearer (then `true`).
    fn time_left(&self) -> (Duration, bool) {
        match self.deadline {
            Some(at) => {
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left < self.timeout {
                    (left, true)
                } else {
                    (self.timeout, false)
                }
            }
            None => (self.timeout, false),
        }
    }

    fn deadline_passed(&self) -> ListError {
        ListError::Deadline(format!(
            "the reads did not finish within the command's deadline of {} (--timeout)",
            crate::formats::duration::show_duration(self.overall)
        ))
    }

    /// The error that ends the command for a failed request: `verb` (`get`, `list`) on
    /// `resource` (`pods`, `pod web-1`), in `namespace` when the request was namespaced.
    pub fn error(
        &self,
        e: ListError,
        verb: &'static str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Error {
        let doing = match verb {
            "get" => "reading",
            "list" => "listing",
            other => other,
        };
        let what = match namespace {
            Some(ns) => format!("{doing} {resource} in {ns}"),
            None => format!("{doing} {resource}"),
        };
        match e {
            ListError::Denied(reason) => Error::AccessDenied(Box::new(crate::error::Denied {
                verb,
                resource: resource.to_string(),
                namespace: namespace.map(str::to_string),
                cluster: format!("{} ({})", self.name, self.server),
                reason,
                hint: None,
            })),
            ListError::Unreachable(reason) => self.unreachable(format!("{what}: {reason}")),
            ListError::Failed(reason) => self.failed(format!("{what}: {reason}")),
            ListError::Deadline(_) => Error::Deadline {
                after: crate::formats::duration::show_duration(self.overall),
                doing: format!("still {what} from {}", self.server),
            },
        }
    }

    /// Gets one object, `Ok(None)` when it does not exist.
    pub async fn get_opt<K>(&self, api: Api<K>, name: &str) -> Result<Option<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        self.request(|| api.get_opt(name)).await
    }

    /// The server answered, but not with what was asked (see [`ListError::Failed`]).
    pub fn failed(&self, message: String) -> Error {
        Error::Cluster(format!(
            "the Kubernetes API server {} failed a request: {message}",
            self.server
        ))
    }

    pub fn unreachable(&self, message: String) -> Error {
        Error::Unreachable {
            server: self.server.clone(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::continue_token;

    #[test]
    fn the_continue_token_is_read_before_the_items() {
        let page = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"812","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ","remainingItemCount":3000},"items":[{"metadata":{"name":"a","annotations":{"x":"\"items\":"}}}]}"#;
        assert_eq!(
            continue_token(page).as_deref(),
            Some("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ")
        );
        // The last page: no token, or an empty one.
        let last = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"812"},"items":[]}"#;
        assert_eq!(continue_token(last), None);
        let empty = r#"{"kind":"PodList","metadata":{"continue":""},"items":[]}"#;
        assert_eq!(continue_token(empty), None);
    }

    #[test]
    fn an_answer_of_another_shape_tells_no_token_early() {
        // items first: the page's own decoding gives the token
        let items_first = r#"{"items":[],"metadata":{"continue":"abc"}}"#;
        assert_eq!(continue_token(items_first), None);
        assert_eq!(continue_token("not json"), None);
        assert_eq!(
            continue_token(r#"{"metadata":{"continue":5},"items":[]}"#),
            None
        );
    }

    /// A page of thousands of Pods, decoded in parts on several threads where there are cores:
    /// the same Pods in the same order as one by one; a broken item anywhere is the error.
    #[test]
    fn a_large_protobuf_page_decodes_in_parts_in_its_order() {
        use crate::formats::kube_protobuf;
        use crate::formats::kube_protobuf_schema::POD;
        use k8s_openapi::api::core::v1::Pod;
        // A real server's list of 7 Pods (tests/fixtures/kube-protobuf/README.md).
        let body = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kube-protobuf/pods.pb"
        ))
        .unwrap();
        let list = kube_protobuf::list(&body).unwrap();
        let raw: Vec<&[u8]> = list.items.iter().cycle().take(3001).copied().collect();
        let one_by_one: Vec<Pod> = raw
            .iter()
            .map(|item| kube_protobuf::decode::<Pod>(item, POD).unwrap())
            .collect();
        let in_parts: Vec<Pod> = super::decode_items(&raw, POD).unwrap();
        assert_eq!(in_parts.len(), 3001);
        assert!(in_parts == one_by_one);
        let mut broken = raw.clone();
        broken[2500] = &[0xff, 0xff];
        assert!(super::decode_items::<Pod>(&broken, POD).is_err());
    }

    /// Pods and Services decoded straight into the snapshot's `Located` objects: the same
    /// objects as decoded plainly, from protobuf (the kind found through the wrapper) and JSON.
    #[test]
    fn located_objects_decode_as_the_objects_they_wrap() {
        use crate::formats::kube_protobuf;
        use crate::formats::kube_protobuf_schema::POD;
        use crate::kube::snapshot::Located;
        use k8s_openapi::api::core::v1::{Pod, Service};
        assert!(super::protobuf_kind::<Located<Pod>>().is_some());
        assert!(super::protobuf_kind::<Located<Service>>().is_some());
        assert_eq!(super::short_type_name::<Located<Pod>>(), "Pod");
        let body = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kube-protobuf/pods.pb"
        ))
        .unwrap();
        let list = kube_protobuf::list(&body).unwrap();
        let plain: Vec<Pod> = super::decode_items(&list.items, POD).unwrap();
        let located: Vec<Located<Pod>> = super::decode_items(&list.items, POD).unwrap();
        assert!(!plain.is_empty());
        assert!(located.iter().map(|l| &l.object).eq(plain.iter()));
        assert!(located.iter().all(|l| l.origin.cluster.is_none()));
        let json = serde_json::to_string(&plain[0]).unwrap();
        let from_json: Located<Pod> = serde_json::from_str(&json).unwrap();
        assert!(from_json.object == plain[0]);
    }

    /// The two ways pages join a list: mapped item by item, or kept where they were decoded
    /// (the first page becomes the list); both drop what `keep` refuses, in order.
    #[test]
    fn pages_are_gathered_mapped_or_in_place() {
        let mut mapped_list: Vec<String> = Vec::new();
        let mut gather = super::mapped(|n: u32| (!n.is_multiple_of(3)).then(|| n.to_string()));
        gather(&mut mapped_list, vec![1, 2, 3], 4);
        gather(&mut mapped_list, vec![4, 5, 6, 7], 0);
        assert_eq!(mapped_list, ["1", "2", "4", "5", "7"]);

        let mut kept: Vec<u32> = Vec::new();
        let mut gather = super::in_place(|n: &mut u32| {
            *n *= 10;
            !n.is_multiple_of(30)
        });
        let first = vec![1, 2, 3];
        let first_at = first.as_ptr();
        gather(&mut kept, first, 0);
        // A single page is the list itself: nothing was moved.
        assert_eq!(kept.as_ptr(), first_at);
        gather(&mut kept, vec![4, 5, 6, 7], 2);
        assert_eq!(kept, [10, 20, 40, 50, 70]);
        assert!(kept.capacity() >= 7);
    }

    /// An answer of `chunks`, as the server's arrives: frame by frame.
    fn arriving(
        chunks: Vec<Vec<u8>>,
    ) -> impl http_body::Body<Data = bytes::Bytes, Error = kube::Error> + Unpin {
        http_body_util::StreamBody::new(futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, kube::Error>(http_body::Frame::data(bytes::Bytes::from(c)))),
        ))
    }

    /// A list read as it arrives, in frames of a few bytes to a whole answer: the answer whole,
    /// and the items decoded meanwhile are the list's, which `first_of` keeps; an item that
    /// does not decode ends the early decoding, and what was decoded early is kept only when
    /// it is the list's first items.
    #[tokio::test]
    async fn a_protobuf_list_is_decoded_as_it_arrives() {
        use crate::formats::kube_protobuf;
        use crate::formats::kube_protobuf_schema::POD;
        use k8s_openapi::api::core::v1::Pod;
        let body = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kube-protobuf/pods.pb"
        ))
        .unwrap();
        let list = kube_protobuf::list(&body).unwrap();
        let expected: Vec<Pod> = list
            .items
            .iter()
            .map(|item| kube_protobuf::decode::<Pod>(item, POD).unwrap())
            .collect();
        for size in [1, 50, 4096, body.len()] {
            let chunks = body.chunks(size).map(<[u8]>::to_vec).collect();
            let (answer, early) = super::read_decoding::<Pod, _>(arriving(chunks), POD, true)
                .await
                .unwrap();
            assert_eq!(answer, body);
            let listed = kube_protobuf::list(&answer).unwrap();
            let items = early.first_of(&answer, &listed.items);
            assert!(items == expected, "in frames of {size}");
        }
        // Not asked to decode (an error answer): the answer only.
        let (answer, early) =
            super::read_decoding::<Pod, _>(arriving(vec![body.clone()]), POD, false)
                .await
                .unwrap();
        assert_eq!(answer, body);
        assert!(early.items.is_empty());
        // The third item broken: the first two decoded early, the rest left to the end.
        let mut broken = body.clone();
        let base = body.as_ptr() as usize;
        let third = list.items[2].as_ptr() as usize - base;
        // Wire type 7 exists in no message.
        broken[third] = 0x0f;
        let chunks = broken.chunks(100).map(<[u8]>::to_vec).collect();
        let (answer, early) = super::read_decoding::<Pod, _>(arriving(chunks), POD, true)
            .await
            .unwrap();
        assert_eq!(early.items.len(), 2);
        // Positions that are not the list's: none kept.
        let elsewhere = super::EarlyItems {
            items: early.items,
            at: vec![0..1, 1..2],
        };
        let listed = kube_protobuf::list(&answer).unwrap();
        assert!(elsewhere.first_of(&answer, &listed.items).is_empty());
        // An envelope that claims 2^40 bytes, then small items: decoded, and no room made
        // for what it claims (no overflow, no abort).
        let mut claims = kube_protobuf::MAGIC.to_vec();
        claims.extend([0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        for _ in 0..40 {
            claims.extend([0x12, 0x00]);
        }
        let (_, early) = super::read_decoding::<Pod, _>(arriving(vec![claims]), POD, true)
            .await
            .unwrap();
        assert_eq!(early.items.len(), 40);
        assert!(early.items.capacity() * std::mem::size_of::<Pod>() <= 2 * super::LARGEST_RESERVED);
    }
}
