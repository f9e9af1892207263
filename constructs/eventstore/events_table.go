// Package eventstore provides EventsTable, the DynamoDB table of the Triggers
// service (seeds 000 and 001): partition key user_id, sort key
// timestamp#event_id, EventTypeIndex and StatusIndex projecting ALL, TTL on
// ttl, a NEW_AND_OLD_IMAGES stream (the seeds' NEW_IMAGE plus the old image
// the archive of expired events needs) and PITR for 35 days, on-demand by
// default.
//
// It adds intent-level grants (append events, read the inbox, update status,
// read the stream) that name exactly the actions and index ARNs each role
// needs, and an import path for a table made elsewhere.
package eventstore

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
	"github.com/triggers-dev/triggers/schema"
)

// IAM actions behind each intent-level grant. The runtime's store uses no
// other calls (see docs/runtime.md).
var (
	appendActions        = []string{"dynamodb:PutItem", "dynamodb:ConditionCheckItem", "dynamodb:GetItem"}
	readInboxActions     = []string{"dynamodb:Query", "dynamodb:GetItem"}
	readInboxLeanActions = []string{"dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem"}
	updateStatusActions  = []string{"dynamodb:UpdateItem", "dynamodb:GetItem"}
)

// AppendActions returns the actions that write new events, idempotency
// records and batches (GrantAppendEvents). It returns a new slice each
// call.
func AppendActions() []string { return slices.Clone(appendActions) }

// ReadInboxActions returns the actions that list and read events, on the
// table and both indexes (GrantReadInbox). It returns a new slice each
// call.
func ReadInboxActions() []string { return slices.Clone(readInboxActions) }

// ReadInboxLeanActions returns the actions that list and read events in
// the lean profile, whose inbox pages read StatusIndex, then the events
// (BatchGetItem). It returns a new slice each call.
func ReadInboxLeanActions() []string { return slices.Clone(readInboxLeanActions) }

// UpdateStatusActions returns the actions that change an event's status
// (GrantUpdateStatus). It returns a new slice each call.
func UpdateStatusActions() []string { return slices.Clone(updateStatusActions) }

// IEventsTable is the events table, made here or imported.
type IEventsTable interface {
	dynamotable.ITable
	// EventTypeIndexName returns "EventTypeIndex", the seed profile's
	// index (a lean table has none; see Profile).
	EventTypeIndexName() *string
	// StatusIndexName returns "StatusIndex".
	StatusIndexName() *string
	// Profile returns the table's profile (schema.ProfileSeed or
	// schema.ProfileLean): the functions that use the table are told it
	// (EVENTS_PROFILE) and the inbox grant follows it.
	Profile() schema.EventsProfile
	// GrantAppendEvents lets grantee ingest events (single, batch,
	// idempotent): AppendActions() on the table only.
	GrantAppendEvents(grantee awsiam.IGrantable) awsiam.Grant
	// GrantReadInbox lets grantee list and read events: ReadInboxActions()
	// on the table, EventTypeIndex and StatusIndex; in the lean profile
	// ReadInboxLeanActions() on the table and StatusIndex.
	GrantReadInbox(grantee awsiam.IGrantable) awsiam.Grant
	// GrantUpdateStatus lets grantee change event status (PATCH, ack):
	// UpdateStatusActions() on the table only.
	GrantUpdateStatus(grantee awsiam.IGrantable) awsiam.Grant
}

// EventsTableProps configures an EventsTable; the schema is fixed but for
// the stream's view. A nil props takes every default (see
// dynamotable.TableOptions).
type EventsTableProps struct {
	dynamotable.TableOptions
	// StreamView is the stream's view type: schema.StreamNewAndOldImages
	// or schema.StreamNewImage. Delivery reads the new image; the archive
	// of expired events (constructs/archive) needs the old one. Changing
	// the view of a deployed table replaces its stream (a new stream ARN):
	// see docs/delivery.md, "Changing the stream view". NEW_IMAGE keeps a
	// table deployed before the change on its stream, without the archive.
	//
	// Default: schema.StreamNewAndOldImages.
	StreamView schema.StreamView
	// Profile is the table's layout: schema.ProfileSeed (the seeds'
	// EventTypeIndex and StatusIndex, both projecting ALL) or
	// schema.ProfileLean (StatusIndex only, sparse and projecting keys,
	// event_type and ttl: about half the write units per event; see
	// docs/capacity.md). Choose it when the table is created: DynamoDB
	// cannot change a deployed index's projection, and the items written
	// under one profile are not laid out for the other.
	//
	// Default: schema.ProfileSeed.
	Profile schema.EventsProfile
	// Sharding lets the functions that use the table (the API and webhook
	// functions of triggersapi) spread a tenant's events over several
	// partition keys, for tenants whose API-keys record asks for more than
	// one shard (triggers-keys shards; docs/sharding.md). Off, every event
	// is in its tenant's own partition, whatever the record says. Every
	// function writing or reading the table must agree, so it is the
	// table's setting, not a function's.
	//
	// Default: false.
	Sharding bool
}

// Sharded is what a table of sharded tenants says of itself: EventsTable
// and the tables FromEventsTableAttributes imports implement it. It is not
// part of IEventsTable, so other implementations stay valid (they are
// unsharded).
type Sharded interface {
	// Sharded reports whether the table's tenants may be sharded
	// (EventsTableProps.Sharding).
	Sharded() bool
}

// DefaultStreamView is the events table's stream view unless
// EventsTableProps.StreamView says otherwise.
const DefaultStreamView = schema.StreamNewAndOldImages

// EventsTable is the events table of seeds 000 and 001.
type EventsTable struct {
	constructs.Construct
	*tablecore.Core
	profile schema.EventsProfile
	sharded bool
}

// NewEventsTable creates the events table. Invalid props panic with an error
// naming each bad value and its fix.
func NewEventsTable(scope constructs.Construct, id *string, props *EventsTableProps) *EventsTable {
	if props == nil {
		props = &EventsTableProps{}
	}
	profile, err := schema.ParseEventsProfile(string(props.Profile))
	if err != nil {
		panic(fmt.Errorf("eventstore %q: Profile: %w", cdkutil.Deref(id), err))
	}
	sc := schema.EventsFor(profile)
	switch props.StreamView {
	case "":
		sc.Stream = DefaultStreamView
	case schema.StreamNewAndOldImages, schema.StreamNewImage:
		sc.Stream = props.StreamView
	default:
		panic(fmt.Errorf("eventstore %q: StreamView %q is not supported: use schema.StreamNewAndOldImages (the default) or schema.StreamNewImage; delivery needs the new image", cdkutil.Deref(id), props.StreamView))
	}
	e := &EventsTable{Core: &tablecore.Core{}, profile: profile, sharded: props.Sharding}
	dynamotable.BuildInto(e, e.Core, scope, id, &dynamotable.TableProps{Schema: &sc, TableOptions: props.TableOptions})
	return e
}

// Profile returns the table's profile.
func (e *EventsTable) Profile() schema.EventsProfile { return e.profile }

// Sharded reports whether the table's tenants may be sharded
// (EventsTableProps.Sharding).
func (e *EventsTable) Sharded() bool { return e.sharded }

// StreamView returns the stream's view type.
func (e *EventsTable) StreamView() schema.StreamView { return e.Schema().Stream }

// Billing returns the billing mode in force.
func (e *EventsTable) Billing() dynamotable.Billing { return dynamotable.Billing(e.BillingMode()) }

// AddStreamConsumer attaches fn to the table's stream with safe defaults
// (see dynamotable.AddStreamConsumer).
func (e *EventsTable) AddStreamConsumer(fn awslambda.IFunction, opts *dynamotable.StreamConsumerOptions) *dynamotable.StreamConsumer {
	return dynamotable.AddStreamConsumer(e, fn, opts)
}

// EventsTableAttributes identify an events table made elsewhere.
type EventsTableAttributes struct {
	// TableName is the physical name. Give TableName or TableArn.
	TableName *string
	// TableArn is the table ARN. Give TableName or TableArn.
	TableArn *string
	// TableStreamArn is the stream ARN; needed for GrantStreamRead.
	//
	// Default: no stream access.
	TableStreamArn *string
	// EncryptionKey is the table's customer-managed key, if any.
	//
	// Default: AWS-managed encryption.
	EncryptionKey awskms.IKey
	// Profile is the table's profile (EventsTableProps.Profile), which the
	// functions and grants must follow.
	//
	// Default: schema.ProfileSeed.
	Profile schema.EventsProfile
	// Sharding is the table's EventsTableProps.Sharding, which the
	// functions must follow.
	//
	// Default: false.
	Sharding bool
}

type importedEvents struct {
	constructs.Construct
	*tablecore.Accessors
	profile schema.EventsProfile
	sharded bool
}

func (t *importedEvents) AddStreamConsumer(fn awslambda.IFunction, opts *dynamotable.StreamConsumerOptions) *dynamotable.StreamConsumer {
	return dynamotable.AddStreamConsumer(t, fn, opts)
}

// FromEventsTableAttributes imports an events table made elsewhere, for
// example in a stateful stack of another app.
func FromEventsTableAttributes(scope constructs.Construct, id *string, attrs *EventsTableAttributes) IEventsTable {
	if attrs == nil {
		attrs = &EventsTableAttributes{}
	}
	profile, err := schema.ParseEventsProfile(string(attrs.Profile))
	if err != nil {
		panic(fmt.Errorf("eventstore %q: Profile: %w", cdkutil.Deref(id), err))
	}
	sc := schema.EventsFor(profile)
	t := &importedEvents{Accessors: &tablecore.Accessors{}, profile: profile, sharded: attrs.Sharding}
	dynamotable.ImportInto(t, t.Accessors, scope, id, &dynamotable.TableAttributes{
		Schema: &sc, TableName: attrs.TableName, TableArn: attrs.TableArn,
		TableStreamArn: attrs.TableStreamArn, EncryptionKey: attrs.EncryptionKey,
	})
	return t
}

// The intent grants, for EventsTable and imported tables alike.

func (e *EventsTable) EventTypeIndexName() *string    { return jsii.String(schema.EventTypeIndex) }
func (e *EventsTable) StatusIndexName() *string       { return jsii.String(schema.StatusIndex) }
func (t *importedEvents) EventTypeIndexName() *string { return jsii.String(schema.EventTypeIndex) }
func (t *importedEvents) StatusIndexName() *string    { return jsii.String(schema.StatusIndex) }

// Sharded reports whether the table was imported with Sharding.
func (t *importedEvents) Sharded() bool { return t.sharded }

// Profile returns the profile the table was imported with.
func (t *importedEvents) Profile() schema.EventsProfile { return t.profile }

func (e *EventsTable) GrantAppendEvents(grantee awsiam.IGrantable) awsiam.Grant {
	return grantAppendEvents(e, grantee)
}
func (e *EventsTable) GrantReadInbox(grantee awsiam.IGrantable) awsiam.Grant {
	return grantReadInbox(e, e.Profile(), grantee)
}
func (e *EventsTable) GrantUpdateStatus(grantee awsiam.IGrantable) awsiam.Grant {
	return grantUpdateStatus(e, grantee)
}
func (t *importedEvents) GrantAppendEvents(grantee awsiam.IGrantable) awsiam.Grant {
	return grantAppendEvents(t, grantee)
}
func (t *importedEvents) GrantReadInbox(grantee awsiam.IGrantable) awsiam.Grant {
	return grantReadInbox(t, t.Profile(), grantee)
}
func (t *importedEvents) GrantUpdateStatus(grantee awsiam.IGrantable) awsiam.Grant {
	return grantUpdateStatus(t, grantee)
}

func grantAppendEvents(t tablegrant.Table, grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(t, grantee, tablegrant.On{Table: true, Write: true}, appendActions...)
}

func grantReadInbox(t tablegrant.Table, profile schema.EventsProfile, grantee awsiam.IGrantable) awsiam.Grant {
	if profile == schema.ProfileLean {
		return tablegrant.Grant(t, grantee, tablegrant.On{Table: true, Indexes: []string{schema.StatusIndex}}, readInboxLeanActions...)
	}
	return tablegrant.Grant(t, grantee, tablegrant.On{Table: true, Indexes: []string{schema.EventTypeIndex, schema.StatusIndex}}, readInboxActions...)
}

func grantUpdateStatus(t tablegrant.Table, grantee awsiam.IGrantable) awsiam.Grant {
	return tablegrant.Grant(t, grantee, tablegrant.On{Table: true, Write: true}, updateStatusActions...)
}
