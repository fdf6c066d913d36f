package cri

import "google.golang.org/grpc"

// Conn returns the gRPC connection to the runtime's socket, or nil when the Runtime was
// built without one (tests). Runtimes may serve more than CRI there: containerd serves its
// own API on the same socket.
func (r *Runtime) Conn() grpc.ClientConnInterface {
	if r == nil || r.conn == nil {
		return nil
	}
	return r.conn
}
