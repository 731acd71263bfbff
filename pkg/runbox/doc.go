// Package runbox puts a run's agent in a box of its own ([sandbox], package sandbox): the box sees the run's
// working copy and a home of its own for the run, and reaches the network only through an egress proxy that the
// ace process working the run serves (proxy.go). A runner asks for a plan before it prepares the agent's
// environment (a boxed agent's home is the run's, not the user's) and wraps the command once it has it (spec.go
// says what the box sees). It keeps each run's box state (store.BoxState) and says it for people (line.go);
// ace doctor asks it whether an agent reaches its endpoints from a box like its runs' (reach.go).
//
// Boxes is built with what it uses, each a small interface or function declared here, never the engine that
// drives the runs: the package imports nothing of pkg/workflow.
package runbox
