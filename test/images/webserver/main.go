// Command webserver is the static HTTP test server that bosun's end-to-end tests
// and the local-cluster tour run as their test image.
//
// It answers a few fixed endpoints whose behaviour the tests can steer at run time:
//
//	GET /                 "bosun webserver <version> on <hostname>"
//	GET /healthz          "ok" (liveness)
//	    /ready            200 "ready" or 503 "not ready" (readiness)
//	    /ready?set=on|off switches readiness and answers the new state with 200
//	GET /version          the version stamped in at build time
//	    /exit?code=N      answers, then exits with code N (default 0)
//	GET /hooks            the lines "webserver hook <name>" appended to the hook log
//
// "webserver hook <name> [<duration>]" is a lifecycle hook command (a preStop exec, say): it
// appends <name> to the hook log, $HOOK_LOG or /tmp/webserver-hooks.log, sleeps for the
// duration when one is given (a slow hook whose start a test can see), and exits. With the
// log on an emptyDir volume, the container started after a restart serves the lines its
// predecessor's hooks wrote.
//
// /ready and /exit accept any method, because the tests reach them through the
// API server's pod proxy, where a plain GET is the easiest request to make.
//
// Readiness starts on, unless --start-not-ready (env START_NOT_READY) keeps it off
// until switched on, or --ready-after (env READY_AFTER) keeps it off for a while
// after start. The listen port is --port, env PORT, or 8080, in that order.
//
// On SIGTERM the server shuts down at once, unless --term-delay (env TERM_DELAY) makes it
// append "sigterm" to the hook log and go on serving for that long first: a container
// slow to stop, whose stop a test can see begin.
//
// The version is set at build time:
//
//	go build -ldflags "-X main.version=v1" ./test/images/webserver
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// version is overridden with -ldflags "-X main.version=...", so that tests can
// tell two builds of the image apart (for example across a rolling update).
var version = "dev"

// shutdownTimeout bounds the graceful shutdown: long enough for in-flight test
// requests to finish, short enough that pod deletion never waits on us.
const shutdownTimeout = 3 * time.Second

// options is what the command line and the environment decide.
type options struct {
	port          string
	readyAfter    time.Duration
	startNotReady bool
	termDelay     time.Duration
}

// server holds the state behind the handlers. It is separate from the listener
// and from process exit so that unit tests can drive it through httptest.
type server struct {
	version  string
	hostname string
	hookLog  string
	logger   *log.Logger
	// exit is called after an /exit response has been written and flushed; main
	// turns it into a graceful shutdown followed by os.Exit.
	exit func(code int)

	mu    sync.Mutex
	ready bool
	// readyTimer switches readiness on once --ready-after has elapsed. An explicit
	// /ready?set=... stops it, so that a test's choice is never overridden later.
	readyTimer *time.Timer
}

// newServer returns a server in its start state: ready, unless opts say otherwise.
func newServer(opts options, version, hostname string, logger *log.Logger, exit func(code int)) *server {
	s := &server{
		version:  version,
		hostname: hostname,
		hookLog:  hookLogPath(os.Getenv),
		logger:   logger,
		exit:     exit,
		ready:    true,
	}
	switch {
	case opts.startNotReady:
		// Takes precedence over --ready-after: the test wants to decide when.
		s.ready = false
	case opts.readyAfter > 0:
		s.ready = false
		s.readyTimer = time.AfterFunc(opts.readyAfter, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.readyTimer == nil {
				return // an explicit switch came first and wins
			}
			s.readyTimer = nil
			s.setReadyLocked(true, fmt.Sprintf("%s after start", opts.readyAfter))
		})
	}
	return s
}

// handler returns the routes of the test server.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.handleRoot)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /version", s.handleVersion)
	mux.HandleFunc("/ready", s.handleReady)
	mux.HandleFunc("/exit", s.handleExit)
	mux.HandleFunc("GET /hooks", s.handleHooks)
	return mux
}

func (s *server) handleHooks(w http.ResponseWriter, _ *http.Request) {
	data, err := os.ReadFile(s.hookLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		writeText(w, http.StatusInternalServerError, fmt.Sprintf("reading %s: %v\n", s.hookLog, err))
		return
	}
	writeText(w, http.StatusOK, string(data))
}

// hookLogPath is where "webserver hook" writes and GET /hooks reads.
func hookLogPath(getenv func(string) string) string {
	if path := getenv("HOOK_LOG"); path != "" {
		return path
	}
	return "/tmp/webserver-hooks.log"
}

// runHook appends name to the hook log.
func runHook(path, name string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, name); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *server) handleRoot(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, fmt.Sprintf("bosun webserver %s on %s\n", s.version, s.hostname))
}

func (s *server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

func (s *server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, s.version+"\n")
}

func (s *server) handleReady(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	if !query.Has("set") {
		if s.isReady() {
			writeText(w, http.StatusOK, "ready")
		} else {
			writeText(w, http.StatusServiceUnavailable, "not ready")
		}
		return
	}

	var ready bool
	switch value := query.Get("set"); value {
	case "on":
		ready = true
	case "off":
		ready = false
	default:
		writeText(w, http.StatusBadRequest, fmt.Sprintf("invalid set value %q: want \"on\" or \"off\"\n", value))
		return
	}
	s.switchReady(ready)
	// The switch itself succeeded whatever the new state is, hence 200 for both;
	// the body tells the state, as a plain /ready would.
	writeText(w, http.StatusOK, readyText(ready))
}

func (s *server) handleExit(w http.ResponseWriter, r *http.Request) {
	code := 0
	if raw := r.URL.Query().Get("code"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > 255 {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("invalid exit code %q: want an integer from 0 to 255\n", raw))
			return
		}
		code = n
	}
	s.logger.Printf("exit requested with code %d by %s", code, r.RemoteAddr)
	writeText(w, http.StatusOK, fmt.Sprintf("exiting with code %d\n", code))
	// Push the answer out before asking to exit: the caller must see it even
	// though the process is about to go away.
	if err := http.NewResponseController(w).Flush(); err != nil {
		s.logger.Printf("flushing the exit response: %v", err)
	}
	s.exit(code)
}

func (s *server) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// switchReady is an explicit switch from a request: it cancels a pending
// --ready-after so the timer cannot undo it.
func (s *server) switchReady(ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readyTimer != nil {
		s.readyTimer.Stop()
		s.readyTimer = nil
	}
	s.setReadyLocked(ready, "switched by request")
}

// setReadyLocked records the new state and logs it if it changed. s.mu must be held.
func (s *server) setReadyLocked(ready bool, why string) {
	if s.ready == ready {
		return
	}
	s.ready = ready
	s.logger.Printf("readiness %s (%s)", onOff(ready), why)
}

func readyText(ready bool) string {
	if ready {
		return "ready"
	}
	return "not ready"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// parseOptions reads the environment first and the flags second, so that an
// explicit flag wins over the environment, which wins over the defaults.
func parseOptions(args []string, getenv func(string) string) (options, error) {
	opts := options{port: "8080"}
	if v := getenv("PORT"); v != "" {
		opts.port = v
	}
	if v := getenv("READY_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return options{}, fmt.Errorf("env READY_AFTER: %w", err)
		}
		opts.readyAfter = d
	}
	if v := getenv("TERM_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return options{}, fmt.Errorf("env TERM_DELAY: %w", err)
		}
		opts.termDelay = d
	}
	if v := getenv("START_NOT_READY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return options{}, fmt.Errorf("env START_NOT_READY: %w", err)
		}
		opts.startNotReady = b
	}

	fs := flag.NewFlagSet("webserver", flag.ContinueOnError)
	fs.StringVar(&opts.port, "port", opts.port, "TCP port to listen on (env PORT)")
	fs.DurationVar(&opts.readyAfter, "ready-after", opts.readyAfter, "stay not ready for this long after start (env READY_AFTER)")
	fs.DurationVar(&opts.termDelay, "term-delay", opts.termDelay, "on SIGTERM, log \"sigterm\" to the hook log and serve this long before shutting down (env TERM_DELAY)")
	fs.BoolVar(&opts.startNotReady, "start-not-ready", opts.startNotReady, "start not ready until /ready?set=on (env START_NOT_READY)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if n, err := strconv.Atoi(opts.port); err != nil || n < 0 || n > 65535 {
		return options{}, fmt.Errorf("invalid port %q: want a number from 0 to 65535", opts.port)
	}
	if opts.termDelay < 0 {
		return options{}, fmt.Errorf("invalid term-delay %s: must not be negative", opts.termDelay)
	}
	if opts.readyAfter < 0 {
		return options{}, fmt.Errorf("invalid ready-after %s: must not be negative", opts.readyAfter)
	}
	return opts, nil
}

func main() {
	os.Exit(run())
}

// run serves until a signal or an /exit request and returns the exit code. It is
// separate from main so that its deferred clean-up runs before os.Exit.
func run() int {
	logger := log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds)
	if (len(os.Args) == 3 || len(os.Args) == 4) && os.Args[1] == "hook" {
		var sleep time.Duration
		if len(os.Args) == 4 {
			d, err := time.ParseDuration(os.Args[3])
			if err != nil {
				fmt.Fprintf(os.Stderr, "webserver hook: %v\n", err)
				return 2
			}
			sleep = d
		}
		if err := runHook(hookLogPath(os.Getenv), os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "webserver hook: %v\n", err)
			return 1
		}
		time.Sleep(sleep)
		return 0
	}

	opts, err := parseOptions(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "webserver: %v\n", err)
		return 2
	}
	hostname, err := os.Hostname()
	if err != nil {
		hostname = "unknown"
	}

	// Register for signals before anything else: as PID 1 in a container the
	// kernel applies no default action to SIGTERM, so without this handler pod
	// deletion would wait out the whole grace period before SIGKILL.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	// /exit only asks; run does the exiting, after a graceful shutdown, which
	// waits for the /exit response itself to be delivered.
	exitRequests := make(chan int, 1)
	requestExit := func(code int) {
		select {
		case exitRequests <- code:
		default: // an exit is already under way; the first code wins
		}
	}

	s := newServer(opts, version, hostname, logger, requestExit)
	listener, err := net.Listen("tcp", ":"+opts.port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "webserver: %v\n", err)
		return 1
	}
	httpServer := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	logger.Printf("bosun webserver %s listening on %s (hostname %s, ready %s)",
		version, listener.Addr(), hostname, onOff(s.isReady()))

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(listener) }()

	code := 0
	select {
	case err := <-serveErr:
		logger.Printf("serving: %v", err)
		return 1
	case sig := <-signals:
		if sig == syscall.SIGTERM && opts.termDelay > 0 {
			logger.Printf("received %s, serving %s more before shutting down", sig, opts.termDelay)
			if err := runHook(s.hookLog, "sigterm"); err != nil {
				logger.Printf("writing the hook log: %v", err)
			}
			time.Sleep(opts.termDelay)
		}
		logger.Printf("received %s, shutting down", sig)
	case code = <-exitRequests:
		logger.Printf("exiting with code %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(ctx); err != nil {
		logger.Printf("graceful shutdown: %v", err)
	}
	return code
}
