// Package deploy holds what it takes to run Heureka outside a Go toolchain,
// and the tests that keep it true to the binary:
//
//   - Dockerfile (with Dockerfile.dockerignore): a multi-stage build of a
//     static binary on distroless, running as a non-root user;
//   - k8s/: a StatefulSet, a headless Service whose DNS name is every
//     node's --join seed, a client-facing Service and a
//     PodDisruptionBudget (kubectl apply -k deploy/k8s);
//   - systemd/heureka.service: a hardened unit;
//   - grafana/heureka.json: a dashboard over the node's metrics;
//   - METRICS.md: every metric family a node exports.
//
// The package has no code. Its tests build the heureka binary and read its
// own flag list (heureka help), so the manifests are checked against the
// command as it is, whatever its implementation; they start real nodes and
// scrape /metrics to check the dashboard and METRICS.md.
package deploy
