// Package systems is the registry of the data systems that Steward can run
// (ZooKeeper, MatrixOne, OceanBase and GPSS).
//
// Every system is a named [System] whose Setup function wires its
// controllers and webhooks into a controller-runtime manager. A system that
// is compiled into the binary is registered once, by name, in a [Registry];
// the --systems flag then picks the registered systems the manager enables
// with [Registry.Select].
//
// The registry distinguishes two kinds of names:
//
//   - known names ([Known]) are the systems Steward is designed to run. A name
//     outside this list is a typing mistake and is reported as "unknown".
//   - available names ([Registry.Available]) are the known systems that this
//     build actually implements. A known name that is not registered is
//     reported as "not available in this build", which tells the user the
//     flag was right but the binary cannot serve it.
//
// Registration is explicit: the manager builds its registry from a list of
// systems rather than relying on init-time side effects, so tests can build
// registries of their own.
package systems
