// Command kruise-e2e runs OpenKruise's own end-to-end suite, unmodified, against bosun: the
// test binary of github.com/openkruise/kruise/test/e2e at the version hack/kruise pins
// (hack/build-kruise.sh builds it), on bosun's local cluster (package test/e2e/cluster) with
// one real node. The images the suite asks for (httpd, nginx, busybox, agnhost) are built here
// from local sources and served through a registry as slow as a real network.
//
// Which specs pass is not left to memory: expectations.txt lists every spec of the label
// filter as `pass` or `not yet: <reason>`. The run fails when a `pass` spec fails, when a
// `not yet` spec starts passing (so that the file stays true), and when the suite and the file
// disagree about which specs exist. It ends with one line: `N passed, N failed, N not yet`.
//
// `make test-kruise-e2e` runs it as root; docs/conformance.md records the tally.
package main
