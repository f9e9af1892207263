package dynamotable

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/tablecore"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

// Replica is one more region of a global table (TableOptions.Replicas).
// Region is required; every other field overrides, for this replica only,
// a setting DynamoDB keeps per replica, and a zero field takes the
// table's. The settings DynamoDB keeps for the whole global table
// (Billing, WriteScaling, MaxWriteRequestUnits, WarmThroughput, the kind
// of encryption) have no field here.
type Replica struct {
	// Region is the replica's AWS region, such as "eu-west-1": not the
	// stack's own region (the table's first replica is there) and not a
	// token. Required.
	Region string
	// EncryptionKey is this region's customer-managed key, when the table
	// has an EncryptionKey: a KMS key lives in one region, so each replica
	// names its own (awskms.Key_FromKeyArn with that region's key ARN, a
	// multi-Region replica key or a key of its own). Required with
	// TableOptions.EncryptionKey, refused without it.
	//
	// Default: nil, the AWS-managed key (aws/dynamodb) of that region.
	EncryptionKey awskms.IKey
	// TableClass is this replica's storage class.
	//
	// Default: the table's TableClass.
	TableClass awsdynamodb.TableClass
	// DeletionProtection stops this replica from being deleted.
	//
	// Default: the table's DeletionProtection (on).
	DeletionProtection *bool
	// RecoveryPeriodDays is how far back this replica's point-in-time
	// recovery restores, 1-35 days. PITR itself is on in every replica.
	//
	// Default: the table's RecoveryPeriodDays (35).
	RecoveryPeriodDays float64
	// ContributorInsights turns Contributor Insights on or off for this
	// replica.
	//
	// Default: the table's ContributorInsights.
	ContributorInsights *bool
	// ContributorInsightsMode is what this replica's Contributor Insights
	// records (see TableOptions.ContributorInsightsMode).
	//
	// Default: the table's ContributorInsightsMode.
	ContributorInsightsMode awsdynamodb.ContributorInsightsMode
	// MaxReadRequestUnits caps this replica's on-demand reads, on the table
	// and on each GSI (see TableOptions.MaxReadRequestUnits).
	//
	// Default: the table's MaxReadRequestUnits.
	MaxReadRequestUnits float64
	// ReadScaling is this replica's read auto scaling, on the table and
	// every GSI; provisioned billing only. Writes scale alike in every
	// replica (TableOptions.WriteScaling): each replica applies every write.
	//
	// Default: the table's ReadScaling.
	ReadScaling *Scaling
	// ResourcePolicy is this replica's resource-based policy (see
	// TableOptions.ResourcePolicy).
	//
	// Default: nil, no resource policy on this replica.
	ResourcePolicy awsiam.PolicyDocument
}

// validateReplicas checks props.Replicas against the rest of props and the
// stack's region. It returns nil for a table without replicas.
func validateReplicas(props *TableProps, stackRegion *string) []error {
	if len(props.Replicas) == 0 {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	here := ""
	if stackRegion == nil || *awscdk.Token_IsUnresolved(stackRegion) {
		bad("Replicas are set but the stack's region is not known at synth time: a global table's replica regions are relative to it; give the stack an environment with a concrete region (awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String(\"us-east-1\")}})")
	} else {
		here = *stackRegion
	}
	if props.PointInTimeRecovery != nil && !*props.PointInTimeRecovery {
		bad("Replicas are set with PointInTimeRecovery off: every replica of a global table keeps point-in-time recovery (a bad write replicates everywhere); remove PointInTimeRecovery: false")
	}
	if props.ContributorInsightsOnIndexes != nil && *props.ContributorInsightsOnIndexes {
		bad("ContributorInsightsOnIndexes is set with Replicas: a global table (aws-cdk's TableV2) sets Contributor Insights on GSIs per replica and not in the stack's region; remove ContributorInsightsOnIndexes, or remove Replicas")
	}
	seen := map[string]int{}
	for i, r := range props.Replicas {
		name := fmt.Sprintf("Replicas[%d]", i)
		switch {
		case r.Region == "":
			bad("%s.Region is empty: name the replica's region, such as \"eu-west-1\"", name)
			continue
		case isTokenString(r.Region):
			bad("%s.Region is a token: a replica region must be a concrete name, such as \"eu-west-1\"", name)
			continue
		case !contract.ValidRegionName(r.Region):
			bad("%s.Region %q is not a region name: use one such as \"eu-west-1\"", name, r.Region)
		case r.Region == here:
			bad("%s.Region %q is the stack's own region: the table's first replica is there already; remove it, or name another region", name, r.Region)
		}
		if j, dup := seen[r.Region]; dup {
			bad("%s.Region %q is also Replicas[%d].Region: a region holds one replica; remove one of them", name, r.Region, j)
		}
		seen[r.Region] = i
		name = fmt.Sprintf("%s (%s)", name, r.Region)
		if props.EncryptionKey != nil && r.EncryptionKey == nil {
			bad("%s has no EncryptionKey but the table has one: a KMS key serves one region; give this replica a key of its region (awskms.Key_FromKeyArn)", name)
		}
		if props.EncryptionKey == nil && r.EncryptionKey != nil {
			bad("%s has an EncryptionKey but the table has none: every replica of a global table is encrypted alike; give the table an EncryptionKey too, or remove this one", name)
		}
		// The replica's own settings follow the same rules as the table's:
		// check them as the options of a table (the table's own are
		// checked once, by ValidateProps).
		o := TableOptions{
			Billing: props.Billing, ReadScaling: r.ReadScaling, RecoveryPeriodDays: r.RecoveryPeriodDays,
			MaxReadRequestUnits: r.MaxReadRequestUnits, TableClass: r.TableClass, ResourcePolicy: r.ResourcePolicy,
		}
		if r.ContributorInsightsMode != "" {
			eff := replicaOptions(props, r)
			o.ContributorInsights, o.ContributorInsightsMode = eff.ContributorInsights, eff.ContributorInsightsMode
		}
		if err := ValidateProps(&TableProps{Schema: props.Schema, TableOptions: o}); err != nil {
			for _, e := range unjoin(err) {
				bad("%s: %v", name, e)
			}
		}
	}
	return errs
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// replicaOptions returns the table options in force in r's region: the
// table's, with r's overrides. Only per-replica settings differ.
func replicaOptions(props *TableProps, r Replica) TableOptions {
	o := TableOptions{
		Billing: props.Billing, ReadScaling: props.ReadScaling,
		RecoveryPeriodDays: props.RecoveryPeriodDays, MaxReadRequestUnits: props.MaxReadRequestUnits,
		TableClass: props.TableClass, DeletionProtection: props.DeletionProtection,
		ContributorInsights: props.ContributorInsights, ContributorInsightsMode: props.ContributorInsightsMode,
		ResourcePolicy: r.ResourcePolicy,
	}
	if r.ReadScaling != nil {
		o.ReadScaling = r.ReadScaling
	}
	if r.RecoveryPeriodDays != 0 {
		o.RecoveryPeriodDays = r.RecoveryPeriodDays
	}
	if r.MaxReadRequestUnits != 0 {
		o.MaxReadRequestUnits = r.MaxReadRequestUnits
	}
	if r.TableClass != "" {
		o.TableClass = r.TableClass
	}
	if r.DeletionProtection != nil {
		o.DeletionProtection = r.DeletionProtection
	}
	if r.ContributorInsights != nil {
		o.ContributorInsights = r.ContributorInsights
	}
	if r.ContributorInsightsMode != "" {
		o.ContributorInsightsMode = r.ContributorInsightsMode
	}
	return o
}

// settings are what the replica-level props of TableV2 take from options,
// shared by the stack region's replica and the others.
type settings struct {
	pitr      *awsdynamodb.PointInTimeRecoverySpecification
	insights  *awsdynamodb.ContributorInsightsSpecification
	protect   *bool
	class     awsdynamodb.TableClass
	maxRead   *float64
	readScale awsdynamodb.Capacity
}

func settingsOf(o TableOptions) settings {
	days := o.RecoveryPeriodDays
	if days == 0 {
		days = DefaultRecoveryPeriodDays
	}
	s := settings{
		pitr:    &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true), RecoveryPeriodInDays: jsii.Number(days)},
		protect: jsii.Bool(o.DeletionProtection == nil || *o.DeletionProtection),
		class:   o.TableClass,
		maxRead: optionalNumber(o.MaxReadRequestUnits),
	}
	if c := o.ContributorInsights; c != nil && *c {
		s.insights = &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(true), Mode: o.ContributorInsightsMode}
	} else if c != nil {
		// Off, said outright: a replica without a setting takes the
		// table's (CDK's TableV2), so a replica turned off under a table
		// with Contributor Insights on would keep them, and their cost.
		s.insights = &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(false)}
	}
	if o.Billing == Provisioned {
		s.readScale = autoscaled(o.ReadScaling.withDefaults())
	}
	return s
}

func autoscaled(s Scaling) awsdynamodb.Capacity {
	return awsdynamodb.Capacity_Autoscaled(&awsdynamodb.AutoscaledCapacityOptions{
		MinCapacity: jsii.Number(s.MinCapacity), MaxCapacity: jsii.Number(s.MaxCapacity),
		TargetUtilizationPercent: jsii.Number(s.TargetUtilizationPercent),
	})
}

// buildGlobalTable builds props as an awsdynamodb.TableV2 (an
// AWS::DynamoDB::GlobalTable) with id "Resource" under self, and records it
// in t. Props are valid (ValidateProps and validateReplicas).
func buildGlobalTable(self constructs.Construct, t *tablecore.Core, props *TableProps, billing Billing, removal awscdk.RemovalPolicy) awsdynamodb.TableV2 {
	sc := *props.Schema
	o := props.TableOptions
	o.Billing = billing
	here := settingsOf(o)
	tp := &awsdynamodb.TablePropsV2{
		PartitionKey:                     l2Attr(&sc.PartitionKey),
		SortKey:                          l2Attr(sc.SortKey),
		RemovalPolicy:                    removal,
		DeletionProtection:               here.protect,
		PointInTimeRecoverySpecification: here.pitr,
		ContributorInsightsSpecification: here.insights,
		TableClass:                       here.class,
		ResourcePolicy:                   props.ResourcePolicy,
	}
	if sc.Stream != schema.StreamNone {
		tp.DynamoStream = awsdynamodb.StreamViewType(sc.Stream)
	} else {
		// Replication needs a stream; the schema's consumers see none
		// (GrantStreamRead and AddStreamConsumer refuse it as before).
		tp.DynamoStream = awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES
	}
	if sc.TTLAttribute != "" {
		tp.TimeToLiveAttribute = jsii.String(sc.TTLAttribute)
	}
	maxWrite := optionalNumber(props.MaxWriteRequestUnits)
	write := props.WriteScaling.withDefaults()
	if billing == Provisioned {
		tp.Billing = awsdynamodb.Billing_Provisioned(&awsdynamodb.ThroughputProps{ReadCapacity: here.readScale, WriteCapacity: autoscaled(write)})
	} else {
		tp.Billing = awsdynamodb.Billing_OnDemand(&awsdynamodb.MaxThroughputProps{MaxReadRequestUnits: here.maxRead, MaxWriteRequestUnits: maxWrite})
	}
	var warm *awsdynamodb.WarmThroughput
	if w := props.WarmThroughput; w != nil {
		warm = &awsdynamodb.WarmThroughput{ReadUnitsPerSecond: optionalNumber(w.ReadUnitsPerSecond), WriteUnitsPerSecond: optionalNumber(w.WriteUnitsPerSecond)}
		tp.WarmThroughput = warm
	}
	replicaKeys := map[string]*string{}
	regions := make([]string, 0, len(props.Replicas))
	replicas := make([]*awsdynamodb.ReplicaTableProps, 0, len(props.Replicas))
	for _, r := range props.Replicas {
		rs := settingsOf(replicaOptions(props, r))
		rp := &awsdynamodb.ReplicaTableProps{
			Region:                           jsii.String(r.Region),
			DeletionProtection:               rs.protect,
			PointInTimeRecoverySpecification: rs.pitr,
			ContributorInsightsSpecification: rs.insights,
			TableClass:                       rs.class,
			ResourcePolicy:                   r.ResourcePolicy,
			MaxReadRequestUnits:              rs.maxRead,
			ReadCapacity:                     rs.readScale,
		}
		// A replica's read cap and read scaling hold for its GSIs too, as
		// the table's do for the table's GSIs.
		if len(sc.GlobalIndexes) > 0 && (rs.maxRead != nil || rs.readScale != nil) {
			ixo := map[string]*awsdynamodb.ReplicaGlobalSecondaryIndexOptions{}
			for _, ix := range sc.GlobalIndexes {
				ixo[ix.Name] = &awsdynamodb.ReplicaGlobalSecondaryIndexOptions{MaxReadRequestUnits: rs.maxRead, ReadCapacity: rs.readScale}
			}
			rp.GlobalSecondaryIndexOptions = &ixo
		}
		if r.EncryptionKey != nil {
			replicaKeys[r.Region] = r.EncryptionKey.KeyArn()
		}
		replicas = append(replicas, rp)
		regions = append(regions, r.Region)
	}
	tp.Replicas = &replicas
	if props.EncryptionKey != nil {
		tp.Encryption = awsdynamodb.TableEncryptionV2_CustomerManagedKey(props.EncryptionKey, &replicaKeys)
	} else {
		tp.Encryption = awsdynamodb.TableEncryptionV2_AwsManagedKey()
	}
	indexes := make([]*awsdynamodb.GlobalSecondaryIndexPropsV2, 0, len(sc.GlobalIndexes))
	for _, ix := range sc.GlobalIndexes {
		p := ix.EffectiveProjection()
		gp := &awsdynamodb.GlobalSecondaryIndexPropsV2{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   l2Attr(&ix.PartitionKey),
			SortKey:        l2Attr(ix.SortKey),
			ProjectionType: awsdynamodb.ProjectionType(p.Type),
			WarmThroughput: warm,
		}
		if len(p.NonKeyAttributes) > 0 {
			gp.NonKeyAttributes = jsii.Strings(p.NonKeyAttributes...)
		}
		if billing == Provisioned {
			gp.ReadCapacity = here.readScale
			gp.WriteCapacity = autoscaled(write)
		} else {
			gp.MaxReadRequestUnits, gp.MaxWriteRequestUnits = here.maxRead, maxWrite
		}
		indexes = append(indexes, gp)
	}
	if len(indexes) > 0 {
		tp.GlobalSecondaryIndexes = &indexes
	}
	res := awsdynamodb.NewTableV2(self, jsii.String("Resource"), tp)
	tablecore.InitAccessors(t.Accessors, res, sc, props.EncryptionKey)
	tablecore.SetGlobalResource(t, res, string(billing), regions)
	return res
}

// replicaErrors joins validateReplicas' errors after ValidateProps' own.
func replicaErrors(err error, props *TableProps, stackRegion *string) error {
	errs := validateReplicas(props, stackRegion)
	if len(errs) == 0 {
		return err
	}
	if err != nil {
		errs = append(unjoin(err), errs...)
	}
	return errors.Join(slices.Clip(errs)...)
}
