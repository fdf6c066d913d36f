// Package runtimecondition reports on the agent's Node whether bosun-daemon reaches the
// container runtime: a node condition that operators and tools can select on, and an event
// at every change. An agent that cannot find its runtime socket keeps running and says so
// here, instead of crash-looping where only its own logs would tell.
//
// What it keeps true: the Node's BosunDaemonRuntimeReady condition says what the agent's
// runtime monitor knows, True with reason RuntimeAnswering and the runtime's name while
// the runtime answers, False with reason RuntimeUnavailable and the last error while it
// does not.
//
// It reports at every change the monitor announces and once a minute, which rewrites a
// condition someone else changed or removed and retries a report that failed. One report:
//
//  1. builds the wanted condition from the monitor's state;
//  2. reads the Node and, when its condition differs in status, reason or message, patches
//     that one condition (up to four attempts, 200 ms apart and doubling), with heartbeat
//     and transition time now, keeping the transition time when the status stays;
//  3. when the status differs from the one this process reported last, records an event on
//     the Node: Normal ContainerRuntimeAvailable or Warning ContainerRuntimeUnavailable. A
//     restarted agent whose Node already shows the runtime unavailable records no second
//     warning.
//
// It is not a queue controller: it starts at once, before the agent's informers synced and
// before the runtime first answered, since that wait is what it reports. So it reads the
// Node with a GET instead of an informer, registers no informer handlers and has no work
// queue; a report that failed is logged and made again at the next change or minute. Its
// events name the whole agent (bosun-daemon) as their source.
//
// It never touches the kubelet's conditions or any other part of the Node, and never acts
// on the runtime.
package runtimecondition
