// Package loadmodel is a discrete-time model of how DynamoDB's partitions
// serve one tenant's ingest: how many events per second a tenant's
// partition-key values sustain, unsharded and sharded, and what throttles
// the rest. It is pure logic (no DynamoDB); `make load` runs it as the
// scale scenario (cmd/triggers-load, docs/performance.md).
//
// The rules it models, with their sources:
//
//   - Partition limits. Every partition of a table, and of each global
//     secondary index, serves at most 1,000 write units and 3,000 read
//     units per second, in on-demand and provisioned mode alike; traffic
//     above that is throttled even when the table has capacity to spare
//     (Developer Guide, "Best practices for designing and using partition
//     keys effectively" and "Burst and adaptive capacity"; "Key range
//     throughput exceeded (hot partitions)").
//   - Item sizes and write units. A write unit covers an item of up to
//     1 KB, so a write takes ceil(size/1024) units; ItemSize follows
//     "DynamoDB item sizes and formats" and reproduces the one-unit payload
//     limits docs/capacity.md measured on DynamoDB Local (617 bytes in the
//     seed profile, 678 in the lean one). Every index an item appears in
//     is written too, billed by the size of its entry (Developer Guide,
//     "Global secondary indexes", writes), and has its own partitions: the
//     events table's indexes are keyed on user_id like the table, so an
//     event lands on a partition of the same key in all three structures.
//     A throttled index write throttles the table's write.
//   - Burst capacity. DynamoDB keeps up to 300 seconds of unused
//     provisioned capacity for bursts; it cannot lift a partition above
//     its 1,000 WCU/s ("How DynamoDB handles spiky workloads", AWS
//     re:Post knowledge center: "Burst capacity can't alleviate
//     partition-level throttling"). Modeled per structure in provisioned
//     mode (Config.ProvisionedWCU); an on-demand table has no provisioned
//     capacity to bank.
//   - Adaptive capacity. A hot partition may use capacity the rest of the
//     table does not, up to the partition maximum ("boost"), so in the
//     model a partition's limit is 1,000 WCU/s whatever the table's
//     share; and adaptive capacity "rebalances your partitions such that
//     frequently accessed items don't reside on the same partition"
//     ("isolate frequently accessed items").
//   - Split for heat. A partition that receives traffic near its limit
//     is split; partitions are only split, never merged (AWS Database
//     Blog, "Scaling DynamoDB: How partitions, hot keys, and split for
//     heat impact performance", part 3). An item collection (one
//     partition-key value) can be broken "into segments by sort key, as
//     long as the item collection isn't traffic that is tracked by a
//     monotonic increase or decrease of the sort key" (Developer Guide,
//     "Isolate frequently accessed items"). The events table's sort key is
//     timestamp#event_id: every new event of a key sorts after all the
//     key's earlier ones, so its writes are exactly such traffic, and a
//     split would leave every new write on the upper half. The model
//     therefore splits a hot partition only between partition-key values,
//     never inside one: one key's ceiling is its partition's 1,000 WCU/s.
//     AWS gives no delay or threshold for a split: the model splits after
//     Config.SplitAfter seconds (default 30) at 80% of the limit or more,
//     an assumption.
//   - New tables. A new on-demand table, and each of its indexes, starts
//     with a warm throughput of 4,000 write units per second (Developer
//     Guide, "Understanding DynamoDB warm throughput in different
//     scenarios"), which the model takes as 4 partitions with equal hash
//     ranges. The table-level side (on-demand serves up to double the
//     previous peak at once; WarmThroughput pre-warms) is reported, not
//     simulated.
//
// What the model does not know: DynamoDB's partition hash (keyHash is a
// stand-in, so which keys share a partition on a new table differs), the
// real split delay, and reads (an inbox page of 50 events at 1 KB costs
// 9 read units, far from a partition's 3,000).
package loadmodel
