#!/usr/bin/env python3
"""Generates a large manifest set for the analyze benchmark.

1,000 namespaces, 5,000 Pods plus 1,000 Deployments of 5 replicas (10,000 pods in all) and
5,000 Services, spread over 10 files. About one namespace in ten is unlabelled, one pod in
twenty lacks its proxy, one service port in eight has a bad name, so every analyzer has work.
On top (issue 13): 2,000 VirtualServices, 2,000 DestinationRules, 200 Gateways, 500
ServiceEntries and 200 Sidecars; one route in ten names a missing host or subset. And issue 14's
kinds: 1,000 AuthorizationPolicies and 200 HTTPRoutes. Issue 23's: a PeerAuthentication per
namespace (STRICT, PERMISSIVE or DISABLE), 100 workload PeerAuthentications with portLevelMtls
(one in two on the Service port, which has no effect), 50 DestinationRules sending plaintext to
STRICT servers, 40 workload-selector DestinationRules, and principals, namespaces and
service accounts in the AuthorizationPolicies (one in ten naming one that does not exist).
Usage: gen_manifests.py OUT_DIR
"""
import os
import sys

if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    print(__doc__.strip(), file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
    sys.exit(0 if sys.argv[1:] in (["-h"], ["--help"]) else 64)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
files = [open(os.path.join(out, f"part-{i:02}.yaml"), "w") for i in range(10)]

def emit(i, text):
    files[i % 10].write("---\n" + text)

for n in range(1000):
    ns = f"team-{n:04}"
    if n % 10 == 0:
        labels = ""
    elif n % 10 == 1:
        labels = "  labels:\n    istio.io/rev: default\n"
    else:
        labels = "  labels:\n    istio-injection: enabled\n"
    emit(n, f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n{labels}")
    for p in range(5):
        proxy = "" if (n * 5 + p) % 20 == 0 else (
            "  - name: istio-proxy\n    image: istio/proxyv2:1.30.0\n"
            "    ports:\n    - containerPort: 15090\n      name: http-envoy-prom\n")
        emit(n, f"""apiVersion: v1
kind: Pod
metadata:
  name: app-{p}-7d4b9c-x{p}z
  namespace: {ns}
  labels:
    app: app-{p}
    team: {ns}
    version: v1
  annotations:
    sidecar.istio.io/status: '{{"containers":["istio-proxy"]}}'
spec:
  containers:
  - name: app
    image: example/app:{p}
    ports:
    - containerPort: 8080
{proxy}""")
        port_name = "web" if (n * 5 + p) % 8 == 0 else "http-web"
        emit(n, f"""apiVersion: v1
kind: Service
metadata:
  name: svc-{p}
  namespace: {ns}
spec:
  selector:
    app: app-{p}
  ports:
  - name: {port_name}
    port: 80
    targetPort: 8080
""")
    emit(n, f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: {ns}
spec:
  replicas: 5
  selector:
    matchLabels:
      app: worker
  template:
    metadata:
      labels:
        app: worker
    spec:
      containers:
      - name: worker
        image: example/worker:1
""")
    # Traffic management: 2 VirtualServices and 2 DestinationRules per namespace, a Gateway and
    # a Sidecar in every fifth, a ServiceEntry in every second.
    for v in range(2):
        host = f"svc-{v}" if (n + v) % 10 else f"svc-missing-{v}"
        subset = "v1" if (n + v) % 7 else "v9"
        gateways = "  gateways: [mesh, edge]\n" if n % 5 == 0 else ""
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: route-{v}
  namespace: {ns}
spec:
  hosts: [svc-{v}]
{gateways}  http:
  - match: [{{uri: {{prefix: /api}}}}]
    route:
    - destination: {{host: {host}, subset: {subset}}}
      weight: 90
    - destination: {{host: svc-{v}, subset: v1}}
      weight: 10
  - route:
    - destination: {{host: svc-{v}, subset: v1}}
""")
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: svc-{v}
  namespace: {ns}
spec:
  host: svc-{v}
  trafficPolicy: {{tls: {{mode: ISTIO_MUTUAL}}}}
  subsets:
  - name: v1
    labels: {{version: v1}}
""")
    if n % 5 == 0:
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: edge
  namespace: {ns}
spec:
  selector: {{app: app-0, team: {ns}}}
  servers:
  - port: {{number: 8080, name: http, protocol: HTTP}}
    hosts: ['./svc-0', './svc-1']
""")
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: {ns}
spec:
  egress: [{{hosts: ['./*', 'istio-system/*']}}]
""")
    if n % 2 == 0:
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: external-{n}
  namespace: {ns}
spec:
  hosts: [api-{n}.example.com]
  ports: [{{number: 443, name: https, protocol: HTTPS}}]
  resolution: DNS
""")
    # Issue 14's kinds: an AuthorizationPolicy in every namespace, an HTTPRoute (Gateway API) in
    # every fifth. Until their analyzers are merged they count as "not analysed".
    emit(n, f"""apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: allow-frontend
  namespace: {ns}
spec:
  selector: {{matchLabels: {{app: app-0}}}}
  action: ALLOW
  rules:
  - from: [{{source: {{principals: [cluster.local/ns/{ns}/sa/frontend]}}}}]
    to: [{{operation: {{methods: [GET], paths: [/api/*]}}}}]
""")
    if n % 5 == 0:
        emit(n, f"""apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: web
  namespace: {ns}
spec:
  parentRefs: [{{name: edge-gw, namespace: {ns}}}]
  hostnames: [web-{n}.example.com]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /}}}}]
    backendRefs: [{{name: svc-0, port: 80}}]
""")
    # Issue 23's kinds: mTLS and identities.
    mode = ("STRICT", "PERMISSIVE", "STRICT", "DISABLE")[n % 4]
    emit(n, f"""apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: default
  namespace: {ns}
spec:
  mtls: {{mode: {mode}}}
""")
    if n % 10 == 0:
        port = 8080 if n % 20 else 80
        emit(n, f"""apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: app-1
  namespace: {ns}
spec:
  selector: {{matchLabels: {{app: app-1}}}}
  mtls: {{mode: STRICT}}
  portLevelMtls:
    {port}: {{mode: PERMISSIVE}}
""")
    if n % 20 == 0:
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: plaintext
  namespace: {ns}
spec:
  host: svc-2
  trafficPolicy: {{tls: {{mode: DISABLE}}}}
""")
    if n % 25 == 0:
        emit(n, f"""apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: canary
  namespace: {ns}
spec:
  host: svc-3.team-{(n + 1) % 1000:04}.svc.cluster.local
  workloadSelector: {{matchLabels: {{app: app-4}}}}
  trafficPolicy: {{loadBalancer: {{simple: LEAST_REQUEST}}}}
""")
    other = f"team-{(n + 7) % 1000:04}" if n % 10 else "team-gone"
    emit(n, f"""apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: from-peers
  namespace: {ns}
spec:
  selector: {{matchLabels: {{app: app-2}}}}
  action: DENY
  rules:
  - from: [{{source: {{notNamespaces: [{ns}, {other}]}}}}]
  - from: [{{source: {{principals: [cluster.local/ns/{other}/sa/default]}}}}]
""")
for f in files:
    f.close()
