package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
)

// The SQLite driver parses a statement's SQL at every call that is not prepared, and River and the store prepare
// none of theirs: parsing was the largest part of ace's own CPU, a third of it with runs polling their jobs
// (River's producer looks for due jobs several times a second). stmtConnector keeps each connection's statements
// by their SQL text, so each is parsed once per connection. SQLite compiles a kept statement again by itself when
// the schema changes under it.

// stmtCacheSize bounds the statements a connection keeps: the store's and River's queries are a few dozen, and
// SQL built for a list of a given length adds one per length; the least recently used goes.
const stmtCacheSize = 128

// stmtConnector opens the driver's connections with a statement cache each.
type stmtConnector struct{ driver.Connector }

func (c stmtConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachedConn(conn)
}

// connWith is what stmtConnector needs of the driver's connection (modernc.org/sqlite's has all of it).
type connWith interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

// cachedConn is a connection that keeps its statements. database/sql uses a connection from one goroutine at a
// time, but a query's rows may still be open when the next statement runs on it (in a transaction): a kept
// statement in use is not shared, the call gets one of its own that is closed after it.
type cachedConn struct {
	connWith
	stmts map[string]*list.Element // of *cachedStmt, most recently used first in lru
	lru   *list.List
}

type cachedStmt struct {
	query string
	s     driver.Stmt
	busy  bool
}

func newCachedConn(conn driver.Conn) (*cachedConn, error) {
	c, ok := conn.(connWith)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("store: the SQLite driver's connection lacks a method the statement cache needs")
	}
	return &cachedConn{connWith: c, stmts: map[string]*list.Element{}, lru: list.New()}, nil
}

// stmt returns the kept statement for query, or a new one; done gives it back (closing one that is not kept).
func (c *cachedConn) stmt(ctx context.Context, query string) (driver.Stmt, func(), error) {
	if el, ok := c.stmts[query]; ok {
		cs := el.Value.(*cachedStmt)
		if !cs.busy {
			c.lru.MoveToFront(el)
			cs.busy = true
			return cs.s, func() { cs.busy = false }, nil
		}
		s, err := c.PrepareContext(ctx, query)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	}
	s, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	cs := &cachedStmt{query: query, s: s, busy: true}
	c.stmts[query] = c.lru.PushFront(cs)
	if c.lru.Len() > stmtCacheSize {
		c.evict() // when every kept statement is in use, none goes: the next call evicts
	}
	return s, func() { cs.busy = false }, nil
}

// evict closes the least recently used statement that is not in use (one in use is left for a later eviction).
func (c *cachedConn) evict() {
	for el := c.lru.Back(); el != nil; el = el.Prev() {
		cs := el.Value.(*cachedStmt)
		if cs.busy {
			continue
		}
		c.lru.Remove(el)
		delete(c.stmts, cs.query)
		_ = cs.s.Close()
		return
	}
}

func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		done()
		return nil, err
	}
	return &cachedRows{Rows: rows, done: done}, nil
}

func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, done, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	defer done()
	return s.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachedConn) Close() error {
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		errs = append(errs, el.Value.(*cachedStmt).s.Close())
	}
	c.stmts, c.lru = nil, list.New()
	return errors.Join(append(errs, c.connWith.Close())...)
}

// cachedRows gives its statement back when closed. The column-type methods are the driver's rows' own.
type cachedRows struct {
	driver.Rows
	done func()
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}
