// Package mosql is the administrative SQL Steward sends to a MatrixOne CN
// over the MySQL protocol (go-sql-driver/mysql): setting a CN's work state
// through mo_ctl, which HAKeeper records and the proxy acts on, and
// counting a CN's sessions through the processlist() table function, which
// asks every CN; forcing a global checkpoint; and account snapshots
// (CREATE, DROP and RESTORE ... FROM SNAPSHOT, mo_catalog.mo_snapshots).
// HAKeeper's own view comes through the log pods' probes
// (tools/mo-agent), not through SQL.
//
// +steward:role=client
package mosql
