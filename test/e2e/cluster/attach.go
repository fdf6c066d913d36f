package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
)

// stateFile, in the cluster directory, tells other processes (the end-to-end suite run
// against `make local-up`) how to reach the running cluster.
const stateFile = "cluster.json"

// state is what Attach needs of a running cluster.
type state struct {
	Kubeconfig      string           `json:"kubeconfig"`
	NodeName        string           `json:"nodeName"`
	RuntimeEndpoint string           `json:"runtimeEndpoint"`
	Components      []componentState `json:"components"`
}

type componentState struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Port int    `json:"port,omitempty"`
	Log  string `json:"log"`
}

func (c *Cluster) writeState() error {
	s := state{Kubeconfig: c.KubeconfigPath(), NodeName: c.nodeName, RuntimeEndpoint: c.RuntimeEndpoint()}
	for _, comp := range c.components {
		s.Components = append(s.Components, componentState{Name: comp.Name(), PID: comp.Pid(), Port: comp.port, Log: comp.LogPath()})
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, stateFile), data, 0o644)
}

// Attach returns a handle on the cluster another process started in dir (`make local-up`
// uses _output/local-up). Its Err reports a component whose process is gone; Stop does
// nothing; Component returns nil, since the processes are not this process's children.
func Attach(dir string) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("attaching to the local cluster in %s (is `make local-up` running?): %w", dir, err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the cluster's kubeconfig: %w", err)
	}
	c := &Cluster{dir: dir, nodeName: s.NodeName, attached: &s, attachedConfig: config,
		failed: make(chan struct{}), stopping: make(chan struct{})}
	if err := c.attachedErr(); err != nil {
		return nil, err
	}
	return c, nil
}

// attachedErr names the first component of an attached cluster whose process is gone.
func (c *Cluster) attachedErr() error {
	for _, comp := range c.attached.Components {
		if !processExists(comp.PID) {
			return fmt.Errorf("%s (pid %d) is not running any more; its log is %s", comp.Name, comp.PID, comp.Log)
		}
	}
	return nil
}
