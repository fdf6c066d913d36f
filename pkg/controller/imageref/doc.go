// Package imageref is bosun's one reader of container image references, for both binaries:
// the strict parser that ImagePullJobs and NodeImages are checked and keyed with, and the
// lenient helpers that compare references others already accepted (a pod's spec and
// status, what a container runtime lists).
//
// A reference is NAME[:TAG][@DIGEST]. Every function here takes it apart the same way
// (Split): the digest follows the first "@", the tag follows a ":" that comes after the
// last "/" of what precedes the digest (a ":" before that "/" belongs to a registry port),
// and NAME is the rest. NAME is [DOMAIN/]PATH, and its first component is a DOMAIN only
// when it contains "." or ":", is "localhost", or has an upper-case letter; otherwise the
// reference is on Docker Hub, whose official images live under "library/".
//
// Parse also checks every part:
//
//   - DOMAIN is dot-separated host components of letters, digits and inner hyphens, with
//     an optional :PORT, or a bracketed IPv6 address;
//   - PATH is slash-separated components of lower-case letters and digits, joined inside a
//     component by ".", "_", "__" or any run of "-";
//   - TAG is a word character followed by up to 127 word characters, "." or "-";
//   - DIGEST is ALGORITHM:HEX (sha256 needs 64 hex digits, any algorithm at least 32).
//
// Docker Hub goes by several host names. Parse folds only the legacy "index.docker.io"
// into "docker.io", so that "nginx", "library/nginx", "docker.io/nginx" and
// "index.docker.io/library/nginx" are all the familiar name "nginx" while a reference
// that names "registry-1.docker.io" keeps the registry its author wrote. The lenient
// helpers (Normalize, SplitName) fold "registry-1.docker.io" too: it is the host Docker
// Hub's registry API answers on, so registry credentials are keyed by it and the node
// agent treats it as Docker Hub.
package imageref
