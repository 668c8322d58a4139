//! A fake Agones SDK sidecar: the gRPC services `agones.dev.sdk.SDK` and
//! `agones.dev.sdk.beta.SDK` (Counters), served by tonic on
//! `127.0.0.1:0` from stubs generated out of the protos the `agones`
//! crate is built from (`build.rs`). It records every call and keeps a
//! GameServer the test can move (as an allocation would), so a test
//! asserts what `serve --agones` says to Agones without a cluster.
//!
//! Counters behave as the real sidecar's: undeclared names are
//! `NOT_FOUND`, a count set or changed past the capacity or below zero
//! is refused, and `GetCounter` reads the latest value.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::watch;
use tokio_stream::wrappers::{TcpListenerStream, WatchStream};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

/// Generated from `proto/agones/sdk/sdk.proto`.
#[allow(missing_docs, missing_debug_implementations, clippy::all)]
pub mod sdk {
    tonic::include_proto!("agones.dev.sdk");
}

/// Generated from `proto/agones/sdk/beta/beta.proto`.
#[allow(missing_docs, missing_debug_implementations, clippy::all)]
pub mod beta {
    tonic::include_proto!("agones.dev.sdk.beta");
}

use sdk::game_server::status::CounterStatus;
use sdk::game_server::{ObjectMeta, Status as GsStatus};
use sdk::GameServer;

/// One call the game server made, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `Ready`.
    Ready,
    /// `Allocate` (the server allocating itself).
    Allocate,
    /// `Shutdown`.
    Shutdown,
    /// `SetLabel(key, value)`.
    SetLabel(String, String),
    /// `SetAnnotation(key, value)`.
    SetAnnotation(String, String),
    /// `UpdateCounter`: name, count set, capacity set, difference.
    UpdateCounter {
        /// Counter.
        name: String,
        /// A count set outright.
        count: Option<i64>,
        /// A capacity set.
        capacity: Option<i64>,
        /// A count changed by this much.
        diff: i64,
    },
}

/// What the fake sidecar knows.
#[derive(Debug, Default)]
pub struct State {
    /// Every call but `Health`, `GetGameServer`, `WatchGameServer` and
    /// `GetCounter`, in order.
    pub calls: Vec<Call>,
    /// When each health ping arrived.
    pub health: Vec<Instant>,
    /// Counters: name → (count, capacity).
    pub counters: BTreeMap<String, (i64, i64)>,
    /// Labels and annotations set by the SDK (keys as given, without
    /// Agones' `agones.dev/sdk-` prefix).
    pub labels: BTreeMap<String, String>,
    /// Annotations, likewise.
    pub annotations: BTreeMap<String, String>,
    /// The GameServer's state (`Scheduled`, `Ready`, `Allocated`, ...).
    pub gs_state: String,
}

type Shared = Arc<(Mutex<State>, watch::Sender<GameServer>)>;

/// A running fake sidecar.
#[derive(Debug)]
pub struct FakeSdk {
    /// Where it listens (give its port to the server).
    pub addr: SocketAddr,
    shared: Shared,
    name: String,
    task: tokio::task::JoinHandle<()>,
}

impl FakeSdk {
    /// Starts a sidecar for the GameServer `name` with the Counters
    /// `counters` declared (count 0, capacity 0, as a Fleet declares them
    /// before the server sets capacities).
    pub async fn start(name: &str, counters: &[&str]) -> FakeSdk {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake sdk");
        let addr = listener.local_addr().expect("local address");
        let state = State {
            counters: counters.iter().map(|c| (c.to_string(), (0, 0))).collect(),
            gs_state: "Scheduled".into(),
            ..State::default()
        };
        let gs = game_server(name, &state);
        let shared: Shared = Arc::new((Mutex::new(state), watch::channel(gs).0));
        let svc = Service {
            shared: shared.clone(),
            name: name.to_string(),
        };
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(sdk::sdk_server::SdkServer::new(svc.clone()))
                .add_service(beta::sdk_server::SdkServer::new(svc))
                .serve_with_incoming(TcpListenerStream::new(listener))
                .await;
        });
        FakeSdk {
            addr,
            shared,
            name: name.to_string(),
            task,
        }
    }

    /// The state, locked.
    pub fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// A GameServerAllocation: the GameServer becomes `Allocated` and the
    /// `rooms` Counter goes up by `rooms` (the high-density pattern's
    /// counter action), as Agones would do on the GameServer record.
    pub fn allocate(&self, rooms: i64) {
        let mut s = lock(&self.shared);
        s.gs_state = "Allocated".into();
        if let Some(c) = s.counters.get_mut("rooms") {
            c.0 = (c.0 + rooms).min(c.1);
        }
        let gs = game_server(&self.name, &s);
        drop(s);
        self.shared.1.send_replace(gs);
    }

    /// Health pings so far.
    pub fn health_pings(&self) -> usize {
        self.state().health.len()
    }

    /// A Counter's count.
    pub fn count(&self, name: &str) -> i64 {
        self.state().counters.get(name).map_or(-1, |c| c.0)
    }

    /// A Counter's capacity.
    pub fn capacity(&self, name: &str) -> i64 {
        self.state().counters.get(name).map_or(-1, |c| c.1)
    }

    /// Whether `call` was made.
    pub fn called(&self, call: &Call) -> bool {
        self.state().calls.contains(call)
    }
}

impl Drop for FakeSdk {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.0.lock().unwrap_or_else(|e| e.into_inner())
}

fn game_server(name: &str, s: &State) -> GameServer {
    GameServer {
        object_meta: Some(ObjectMeta {
            name: name.to_string(),
            namespace: "default".into(),
            labels: s
                .labels
                .iter()
                .map(|(k, v)| (format!("agones.dev/sdk-{k}"), v.clone()))
                .collect(),
            annotations: s
                .annotations
                .iter()
                .map(|(k, v)| (format!("agones.dev/sdk-{k}"), v.clone()))
                .collect(),
            ..ObjectMeta::default()
        }),
        spec: None,
        status: Some(GsStatus {
            state: s.gs_state.clone(),
            address: "127.0.0.1".into(),
            counters: s
                .counters
                .iter()
                .map(|(k, &(count, capacity))| (k.clone(), CounterStatus { count, capacity }))
                .collect(),
            ..GsStatus::default()
        }),
    }
}

#[derive(Clone)]
struct Service {
    shared: Shared,
    name: String,
}

impl Service {
    fn record(&self, call: Call) -> MutexGuard<'_, State> {
        let mut s = lock(&self.shared);
        s.calls.push(call);
        s
    }

    fn publish(&self, s: MutexGuard<'_, State>) {
        let gs = game_server(&self.name, &s);
        drop(s);
        self.shared.1.send_replace(gs);
    }
}

type GsStream = Pin<Box<dyn Stream<Item = Result<GameServer, Status>> + Send>>;

#[tonic::async_trait]
impl sdk::sdk_server::Sdk for Service {
    async fn ready(&self, _: Request<sdk::Empty>) -> Result<Response<sdk::Empty>, Status> {
        let mut s = self.record(Call::Ready);
        s.gs_state = "Ready".into();
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }

    async fn allocate(&self, _: Request<sdk::Empty>) -> Result<Response<sdk::Empty>, Status> {
        let mut s = self.record(Call::Allocate);
        s.gs_state = "Allocated".into();
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }

    async fn shutdown(&self, _: Request<sdk::Empty>) -> Result<Response<sdk::Empty>, Status> {
        let mut s = self.record(Call::Shutdown);
        s.gs_state = "Shutdown".into();
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }

    async fn health(
        &self,
        request: Request<Streaming<sdk::Empty>>,
    ) -> Result<Response<sdk::Empty>, Status> {
        let mut pings = request.into_inner();
        while let Some(ping) = pings.next().await {
            if ping.is_err() {
                break;
            }
            lock(&self.shared).health.push(Instant::now());
        }
        Ok(Response::new(sdk::Empty {}))
    }

    async fn get_game_server(
        &self,
        _: Request<sdk::Empty>,
    ) -> Result<Response<GameServer>, Status> {
        Ok(Response::new(self.shared.1.borrow().clone()))
    }

    type WatchGameServerStream = GsStream;

    async fn watch_game_server(
        &self,
        _: Request<sdk::Empty>,
    ) -> Result<Response<GsStream>, Status> {
        let stream = WatchStream::new(self.shared.1.subscribe()).map(Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn set_label(&self, r: Request<sdk::KeyValue>) -> Result<Response<sdk::Empty>, Status> {
        let kv = r.into_inner();
        let mut s = self.record(Call::SetLabel(kv.key.clone(), kv.value.clone()));
        s.labels.insert(kv.key, kv.value);
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }

    async fn set_annotation(
        &self,
        r: Request<sdk::KeyValue>,
    ) -> Result<Response<sdk::Empty>, Status> {
        let kv = r.into_inner();
        let mut s = self.record(Call::SetAnnotation(kv.key.clone(), kv.value.clone()));
        s.annotations.insert(kv.key, kv.value);
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }

    async fn reserve(&self, _: Request<sdk::Duration>) -> Result<Response<sdk::Empty>, Status> {
        let mut s = lock(&self.shared);
        s.gs_state = "Reserved".into();
        self.publish(s);
        Ok(Response::new(sdk::Empty {}))
    }
}

#[tonic::async_trait]
impl beta::sdk_server::Sdk for Service {
    async fn get_counter(
        &self,
        r: Request<beta::GetCounterRequest>,
    ) -> Result<Response<beta::Counter>, Status> {
        let name = r.into_inner().name;
        let s = lock(&self.shared);
        let &(count, capacity) = s
            .counters
            .get(&name)
            .ok_or_else(|| Status::not_found(format!("counter not found: {name}")))?;
        Ok(Response::new(beta::Counter {
            name,
            count,
            capacity,
        }))
    }

    async fn update_counter(
        &self,
        r: Request<beta::UpdateCounterRequest>,
    ) -> Result<Response<beta::Counter>, Status> {
        let u = r
            .into_inner()
            .counter_update_request
            .ok_or_else(|| Status::invalid_argument("no counter update"))?;
        let mut s = self.record(Call::UpdateCounter {
            name: u.name.clone(),
            count: u.count,
            capacity: u.capacity,
            diff: u.count_diff,
        });
        let Some(&(count, capacity)) = s.counters.get(&u.name) else {
            return Err(Status::not_found(format!("counter not found: {}", u.name)));
        };
        let capacity = u.capacity.unwrap_or(capacity);
        let count = u.count.unwrap_or(count) + u.count_diff;
        if capacity < 0 || count < 0 || count > capacity {
            return Err(Status::out_of_range(format!(
                "count {count} out of range 0..={capacity}"
            )));
        }
        s.counters.insert(u.name.clone(), (count, capacity));
        self.publish(s);
        Ok(Response::new(beta::Counter {
            name: u.name,
            count,
            capacity,
        }))
    }

    async fn get_list(
        &self,
        _: Request<beta::GetListRequest>,
    ) -> Result<Response<beta::List>, Status> {
        Err(Status::not_found("no lists"))
    }

    async fn update_list(
        &self,
        _: Request<beta::UpdateListRequest>,
    ) -> Result<Response<beta::List>, Status> {
        Err(Status::not_found("no lists"))
    }

    async fn add_list_value(
        &self,
        _: Request<beta::AddListValueRequest>,
    ) -> Result<Response<beta::List>, Status> {
        Err(Status::not_found("no lists"))
    }

    async fn remove_list_value(
        &self,
        _: Request<beta::RemoveListValueRequest>,
    ) -> Result<Response<beta::List>, Status> {
        Err(Status::not_found("no lists"))
    }
}
