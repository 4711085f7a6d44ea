// Package obsql is Steward's OceanBase client: the administrative SQL the
// controllers send to an observer over the MySQL protocol
// (go-sql-driver/mysql), and the rows of OceanBase's documented views they
// read (DBA_OB_SERVERS, DBA_OB_ZONES, GV$OB_PARAMETERS). Every statement is
// OceanBase 4.x's own; the tests run them against obsim, which must answer
// as an observer does.
//
// +steward:role=client
package obsql
