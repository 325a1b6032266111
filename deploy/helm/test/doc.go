// Package charttest holds the tests of the Helm chart in
// deploy/helm/handlestore: `helm lint` and `helm template` in every
// configuration the chart documents, every rendered object decoded
// strictly (unknown, misspelt or duplicated fields fail) into the
// Kubernetes API's own Go types (k8s.io/api) or, for the cert-manager and
// Prometheus Operator kinds, into structs of the fields their v1 APIs
// define, then the properties a Raft cluster needs checked on the result.
// kube_test.go runs the chart on a real cluster where one answers.
package charttest
