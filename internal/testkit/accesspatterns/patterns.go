// Package accesspatterns declares, as data, every access pattern the seeds
// list and the key or index that serves it. The same declarations are
// rendered into stacks/ACCESS_PATTERNS.md and executed against DynamoDB
// Local by this package's tests, so the document cannot drift from what
// works. No pattern scans.
package accesspatterns

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/schema"
)

// Operation is how a pattern reads.
type Operation string

// Operations a pattern may use. There is no Scan.
const (
	GetItem Operation = "GetItem"
	Query   Operation = "Query"
	// PutItem writes Item (on the condition Condition, if any); Run
	// returns the item read back with a consistent GetItem.
	PutItem Operation = "PutItem"
	// UpdateItem applies Update to the item at Key (on Condition, if
	// any); Run returns the new item (ReturnValues ALL_NEW).
	UpdateItem Operation = "UpdateItem"
)

// Pattern is one access pattern: the seed's words and the exact request.
type Pattern struct {
	// Seed is the seed file number ("002").
	Seed string
	// Name is the pattern as the seed states it.
	Name string
	// Table is the schema name (schema.Table.Name).
	Table string
	// Index is the GSI name; "" for the base table.
	Index string
	// Op is GetItem or Query.
	Op Operation
	// Key holds GetItem's key values.
	Key map[string]any
	// KeyCondition is Query's key condition expression.
	KeyCondition string
	// Filter is an optional filter expression (applied after the key
	// condition, within the queried partition).
	Filter string
	// Names and Values are the expression attribute names and values.
	Names  map[string]string
	Values map[string]any
	// Descending sets ScanIndexForward=false (newest first).
	Descending bool
	// Count sets Select=COUNT.
	Count bool
	// FetchItems follows a KEYS_ONLY index query with a GetItem per key.
	FetchItems bool
	// Limit bounds the page; 0 means no limit beyond DynamoDB's 1 MB page.
	Limit int32
	// Item is PutItem's item.
	Item map[string]any
	// Update is UpdateItem's update expression.
	Update string
	// Condition is a write's condition expression.
	Condition string
}

// Patterns returns every declared pattern, in seed order.
func Patterns() []Pattern {
	var out []Pattern
	out = append(out, Triggers()...)
	out = append(out, Ticketing()...)
	out = append(out, Tenant()...)
	out = append(out, Ferryhook()...)
	return out
}

// Tables returns the schemas the patterns use, by name.
func Tables() map[string]schema.Table {
	out := map[string]schema.Table{}
	for _, t := range schema.Catalog() {
		out[t.Name] = t
	}
	return out
}

// Result is what a pattern returned.
type Result struct {
	Items []map[string]types.AttributeValue
	Count int32
}

// Run executes the pattern on the physical table tableName.
func (p Pattern) Run(ctx context.Context, c *dynamodb.Client, tableName string) (Result, error) {
	switch p.Op {
	case GetItem:
		key, err := attributevalue.MarshalMap(p.Key)
		if err != nil {
			return Result{}, fmt.Errorf("marshal key: %w", err)
		}
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tableName), Key: key})
		if err != nil {
			return Result{}, err
		}
		if out.Item == nil {
			return Result{}, nil
		}
		return Result{Items: []map[string]types.AttributeValue{out.Item}, Count: 1}, nil
	case Query:
		values, err := attributevalue.MarshalMap(p.Values)
		if err != nil {
			return Result{}, fmt.Errorf("marshal values: %w", err)
		}
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(tableName),
			KeyConditionExpression:    aws.String(p.KeyCondition),
			ExpressionAttributeValues: values,
			ScanIndexForward:          aws.Bool(!p.Descending),
		}
		if len(p.Names) > 0 {
			in.ExpressionAttributeNames = p.Names
		}
		if p.Index != "" {
			in.IndexName = aws.String(p.Index)
		}
		if p.Filter != "" {
			in.FilterExpression = aws.String(p.Filter)
		}
		if p.Count {
			in.Select = types.SelectCount
		}
		if p.Limit > 0 {
			in.Limit = aws.Int32(p.Limit)
		}
		out, err := c.Query(ctx, in)
		if err != nil {
			return Result{}, err
		}
		res := Result{Items: out.Items, Count: out.Count}
		if p.FetchItems {
			tab := Tables()[p.Table]
			for i, it := range res.Items {
				key := map[string]types.AttributeValue{tab.PartitionKey.Name: it[tab.PartitionKey.Name]}
				if tab.SortKey != nil {
					key[tab.SortKey.Name] = it[tab.SortKey.Name]
				}
				got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tableName), Key: key})
				if err != nil {
					return Result{}, err
				}
				res.Items[i] = got.Item
			}
		}
		return res, nil
	case PutItem:
		item, err := attributevalue.MarshalMap(p.Item)
		if err != nil {
			return Result{}, fmt.Errorf("marshal item: %w", err)
		}
		in := &dynamodb.PutItemInput{TableName: aws.String(tableName), Item: item}
		if err := p.conditions(&in.ConditionExpression, &in.ExpressionAttributeNames, &in.ExpressionAttributeValues); err != nil {
			return Result{}, err
		}
		if _, err := c.PutItem(ctx, in); err != nil {
			return Result{}, err
		}
		tab := Tables()[p.Table]
		key := map[string]types.AttributeValue{tab.PartitionKey.Name: item[tab.PartitionKey.Name]}
		if tab.SortKey != nil {
			key[tab.SortKey.Name] = item[tab.SortKey.Name]
		}
		got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tableName), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return Result{}, err
		}
		return Result{Items: []map[string]types.AttributeValue{got.Item}, Count: 1}, nil
	case UpdateItem:
		key, err := attributevalue.MarshalMap(p.Key)
		if err != nil {
			return Result{}, fmt.Errorf("marshal key: %w", err)
		}
		in := &dynamodb.UpdateItemInput{TableName: aws.String(tableName), Key: key, UpdateExpression: aws.String(p.Update), ReturnValues: types.ReturnValueAllNew}
		if err := p.conditions(&in.ConditionExpression, &in.ExpressionAttributeNames, &in.ExpressionAttributeValues); err != nil {
			return Result{}, err
		}
		out, err := c.UpdateItem(ctx, in)
		if err != nil {
			return Result{}, err
		}
		return Result{Items: []map[string]types.AttributeValue{out.Attributes}, Count: 1}, nil
	default:
		return Result{}, fmt.Errorf("pattern %q: unknown operation %q", p.Name, p.Op)
	}
}

// conditions fills a write's condition, names and values.
func (p Pattern) conditions(cond **string, names *map[string]string, values *map[string]types.AttributeValue) error {
	if p.Condition != "" {
		*cond = aws.String(p.Condition)
	}
	if len(p.Names) > 0 {
		*names = p.Names
	}
	if len(p.Values) > 0 {
		v, err := attributevalue.MarshalMap(p.Values)
		if err != nil {
			return fmt.Errorf("marshal values: %w", err)
		}
		*values = v
	}
	return nil
}

// Markdown renders the patterns as the tables of stacks/ACCESS_PATTERNS.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Access patterns\n\n")
	b.WriteString("Generated from `internal/testkit/accesspatterns` (its tests run every row against DynamoDB Local with\n")
	b.WriteString("sample items and check the results; `UPDATE_GOLDEN=1 go test ./internal/testkit/accesspatterns/`\n")
	b.WriteString("rewrites this file). Every read is a GetItem or a Query on a key or an index: no scans; writes\n")
	b.WriteString("are conditional PutItem / UpdateItem on the full key.\n")
	b.WriteString("`:name` placeholders are the request's expression values; `#name` placeholders are attribute\n")
	b.WriteString("names (needed for names like `status` and `date`, which DynamoDB reserves).\n")
	titles := map[string]string{
		"000": "Triggers events table (seeds 000/001, stack `triggers-<env>-data`; the runtime's store issues these requests)",
		"002": "Event ticketing (seed 002, stack `ticketing-<env>-data`)",
		"003": "Tenant design (seed 003, stack `tenant-<env>-data`)",
		"004": "Ferryhook (seed 004, stack `ferryhook-<env>-data`)",
	}
	seed, n := "", 0
	for _, p := range Patterns() {
		n++
		if p.Seed != seed {
			seed, n = p.Seed, 1
			fmt.Fprintf(&b, "\n## %s\n\n", titles[seed])
			b.WriteString("| # | pattern | table | served by | request |\n|---|---|---|---|---|\n")
		}
		by := "base table"
		if p.Index != "" {
			by = "`" + p.Index + "`"
			if ix, ok := Tables()[p.Table].Index(p.Index); ok {
				by += fmt.Sprintf(" (%s)", strings.ToLower(string(ix.EffectiveProjection().Type)))
			}
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | %s | %s |\n", n, p.Name, p.Table, by, p.request())
	}
	return b.String()
}

func (p Pattern) request() string {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	keyText := func(m map[string]any) string {
		keys := make([]string, 0, len(m))
		for k, v := range m {
			keys = append(keys, fmt.Sprintf("`%s = %s`", k, esc(fmt.Sprint(v))))
		}
		sort.Strings(keys)
		return strings.Join(keys, ", ")
	}
	cond := ""
	if p.Condition != "" {
		cond = ", condition `" + esc(p.Condition) + "`"
	}
	switch p.Op {
	case GetItem:
		return "GetItem " + keyText(p.Key)
	case PutItem:
		tab := Tables()[p.Table]
		key := map[string]any{tab.PartitionKey.Name: p.Item[tab.PartitionKey.Name]}
		if tab.SortKey != nil {
			key[tab.SortKey.Name] = p.Item[tab.SortKey.Name]
		}
		return "PutItem " + keyText(key) + cond
	case UpdateItem:
		return "UpdateItem " + keyText(p.Key) + ", `" + esc(p.Update) + "`" + cond
	}
	parts := []string{"Query `" + esc(p.KeyCondition) + "`"}
	if p.Filter != "" {
		parts = append(parts, "filter `"+esc(p.Filter)+"`")
	}
	if p.Descending {
		parts = append(parts, "ScanIndexForward=false")
	}
	if p.Count {
		parts = append(parts, "Select=COUNT")
	}
	if p.FetchItems {
		parts = append(parts, "then GetItem per key")
	}
	return strings.Join(parts, ", ")
}
