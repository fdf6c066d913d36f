package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/time/rate"
)

// throttledProxy relays TCP connections to a target address, sending the target's answers
// back no faster than a fixed rate shared by all connections: a registry behind it serves
// pulls at the speed of a slow network.
type throttledProxy struct {
	host, target string
	listener     net.Listener
	limiter      *rate.Limiter
	ctx          context.Context
	cancel       context.CancelFunc

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// throttleChunk is the most sent back at once, and the limiter's burst.
const throttleChunk = 32 << 10

// startThrottledProxy listens on host and relays to target at bytesPerSecond.
func startThrottledProxy(host, target string, bytesPerSecond int) (*throttledProxy, error) {
	listener, err := net.Listen("tcp", host)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", host, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &throttledProxy{
		host: host, target: target, listener: listener,
		limiter: rate.NewLimiter(rate.Limit(bytesPerSecond), throttleChunk),
		ctx:     ctx, cancel: cancel,
		conns: map[net.Conn]struct{}{},
	}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *throttledProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed by stop
		}
		p.wg.Go(func() { p.relay(client) })
	}
}

// track records conn for stop, until it is closed; false once the proxy stops.
func (p *throttledProxy) track(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[conn] = struct{}{}
	return true
}

// close closes conn and forgets it.
func (p *throttledProxy) close(conn net.Conn) {
	_ = conn.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, conn)
}

// relay connects client to the target until either side closes.
func (p *throttledProxy) relay(client net.Conn) {
	defer p.close(client)
	if !p.track(client) {
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer p.close(upstream)
	if !p.track(upstream) {
		return
	}
	// Requests go through as they come.
	p.wg.Go(func() {
		_, _ = io.Copy(upstream, client)
		p.close(upstream)
	})
	buf := make([]byte, throttleChunk)
	for {
		n, err := upstream.Read(buf)
		if n > 0 {
			if p.limiter.WaitN(p.ctx, n) != nil {
				return
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stop closes the listener and every connection, and waits for the relays to end.
func (p *throttledProxy) stop() {
	p.cancel()
	_ = p.listener.Close()
	p.mu.Lock()
	for conn := range p.conns {
		_ = conn.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
