// Package capacity measures the DynamoDB capacity the Triggers API
// consumes per operation, on DynamoDB Local, and renders it as the tables
// of docs/capacity.md. It is test-only: its test regenerates
// the document and fails when it differs.
//
// Nothing in the store or the handlers changes for it: a Recorder is an
// SDK middleware on the DynamoDB client that sets ReturnConsumedCapacity
// to INDEXES on every request and records the ConsumedCapacity of every
// response, while the real handlers (internal/httpapi over
// internal/store) serve the requests.
package capacity

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Call is one DynamoDB request as the Recorder saw it.
type Call struct {
	// Operation is the API operation (PutItem, Query...).
	Operation string
	// Consumed is what the response reported, one entry per table
	// (TransactWriteItems and the batch operations report one per table
	// touched); nil when the response carried none.
	Consumed []types.ConsumedCapacity
	// Err is the call's error. An error response carries no
	// ConsumedCapacity, even where DynamoDB bills the request (a failed
	// conditional write, a canceled transaction).
	Err error
}

// Recorder records the consumed capacity of every call of the clients it
// is installed on. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Option installs the recorder on a DynamoDB client:
//
//	client := ddb.NewLocalClient(endpoint, rec.Option)
func (r *Recorder) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("RecordConsumedCapacity", r.handle), middleware.After)
	})
}

func (r *Recorder) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	askForCapacity(in.Parameters)
	out, md, err := next.HandleInitialize(ctx, in)
	c := Call{Operation: middleware.GetOperationName(ctx), Err: err}
	if err == nil {
		c.Consumed = consumed(out.Result)
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return out, md, err
}

// Calls returns the calls recorded since the last Reset.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Reset forgets the calls recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
}

// askForCapacity sets ReturnConsumedCapacity to INDEXES on every input
// type that has it.
func askForCapacity(params any) {
	const idx = types.ReturnConsumedCapacityIndexes
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.ScanInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.TransactGetItemsInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = idx
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = idx
	}
}

// consumed returns the ConsumedCapacity of an output, whatever its type.
func consumed(result any) []types.ConsumedCapacity {
	one := func(c *types.ConsumedCapacity) []types.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []types.ConsumedCapacity{*c}
	}
	switch out := result.(type) {
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.TransactWriteItemsOutput:
		return out.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return out.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.BatchGetItemOutput:
		return out.ConsumedCapacity
	}
	return nil
}

// Units is capacity by where it was consumed: "table" for the base table,
// else the index name. Read and write units are kept apart.
type Units struct {
	// Read and Write map TableKey or an index name to units.
	Read, Write map[string]float64
}

// IsWrite reports whether DynamoDB bills operation in write units.
func IsWrite(operation string) bool {
	switch operation {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		return true
	}
	return false
}

// TableKey is the Units key of the base table.
const TableKey = "table"

// Sum adds up the capacity of calls on table (other tables are ignored),
// by the table and each of its indexes, as read or write units by the
// operation. It fails when a successful call reported no capacity.
func Sum(calls []Call, table string) (Units, error) {
	u := Units{Read: map[string]float64{}, Write: map[string]float64{}}
	for _, c := range calls {
		if c.Err != nil {
			continue
		}
		if len(c.Consumed) == 0 {
			return u, fmt.Errorf("%s reported no consumed capacity", c.Operation)
		}
		m := u.Read
		if IsWrite(c.Operation) {
			m = u.Write
		}
		for _, cc := range c.Consumed {
			if aws.ToString(cc.TableName) != table {
				continue
			}
			if cc.Table != nil {
				m[TableKey] += aws.ToFloat64(cc.Table.CapacityUnits)
			} else if len(cc.GlobalSecondaryIndexes) == 0 {
				m[TableKey] += aws.ToFloat64(cc.CapacityUnits)
			}
			for name, gc := range cc.GlobalSecondaryIndexes {
				m[name] += aws.ToFloat64(gc.CapacityUnits)
			}
		}
	}
	return u, nil
}
