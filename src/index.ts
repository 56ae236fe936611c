/**
 * rollcall: which of your services are alive right now, and the coordination tools that go with
 * it. The root export is the coordination layer (tooz's API, wire-compatible with Python tooz);
 * service groups live in `rollcall/servicegroup`.
 */
export { connect, createCoordinator, defaultMemberId, COMMON_OPTIONS } from './coordination/connect.js'
export type { BaseConnectOptions, BuiltinScheme, ClientOption, CodeOptions, ConnectOptions, ConnectOptionsFor, DriverOptions, MysqlOwnPool, OwnClients,
  PgOwnClient, PgOwnPool, SchemeOf } from './coordination/config/connect-options.js'
export type { RedisOwnClient } from './coordination/drivers/redis/redis-own-client.js'
export type {
  BuiltinDriverOptions,
  EtcdOptions,
  FileOptions,
  MemcachedOptions,
  MemoryOptions,
  MysqlOptions,
  PostgresqlOptions,
  RedisOptions,
  ZookeeperOptions,
} from './coordination/config/driver-options.js'
export { Coordinator } from './coordination/coordinator.js'
export { TypedGroup, type CapabilitiesParser, type TypedGroupOptions } from './coordination/typed-group.js'
export type { MemberJoinedCallback, MemberJoinedEvent, MemberLeftCallback, MemberLeftEvent } from './coordination/typed-watch.js'
export type { CoordinatorState, MemberInfo, Health } from './coordination/coordinator.js'
export type { CoordinatorEvents, MemberEvent, LeaderEvent, HeartbeatFailure } from './coordination/events.js'
export type { WatchCallback } from './coordination/runtime/watchers.js'
export { GroupView, GROUP_VIEW_DEFAULTS } from './coordination/group-view.js'
export type { GroupViewChange, GroupViewEvents, GroupViewOptions } from './coordination/group-view.js'
export type { LeaderCallback, StandDownOptions } from './coordination/runtime/election.js'
export { Lock } from './coordination/lock.js'
export { Leadership, type CampaignOptions } from './coordination/leadership.js'
export type { AcquireOptions } from './coordination/lock.js'
export { HashRing } from './coordination/hashring.js'
export type { HashRingOptions, GetNodesOptions, HashRingNode } from './coordination/hashring.js'
export { Partitioner, hashObject } from './coordination/partitioner.js'
export type { PartitionerOptions, OwnershipOptions, TooZHashable } from './coordination/partitioner.js'
export { CAPABILITY_DOCS, ALL_CAPABILITIES, isCapability } from './coordination/capabilities.js'
export type { Capability } from './coordination/capabilities.js'
export { dumps, loads, ExtData } from './coordination/codec/index.js'
export { parseBackendUrl, redactUrl } from './coordination/config/url.js'
export type { BackendUrl, HostPort } from './coordination/config/url.js'
export { registerDriver, knownSchemes, loadDriver, BUILTIN_DRIVERS } from './coordination/config/registry.js'
export type { DriverLoader } from './coordination/config/registry.js'
export { defineDriver } from './coordination/driver.js'
export type {
  BeatLocks,
  ConnectionState,
  CoordinationDriver,
  DriverClientSupport,
  DriverContext,
  DriverDefinition,
  DriverEvents,
  DriverLock,
  DriverMemberInfo,
  HeartbeatResult,
  IdKind,
  LockMode,
  LockWaiting,
  NotifyWaiting,
  PollWaiting,
  QueueWaiting,
  TranslateContext,
} from './coordination/driver.js'
export { opt } from './coordination/config/options.js'
export type { Bounds, DeclaresDefault, OptionDeclaration, OptionSpec, OptionSpecs, ResolvedOptions } from './coordination/config/options.js'
export { TRACING_CHANNELS } from './coordination/tracing.js'
export type {
  ConnectTrace,
  ElectionLostTrace,
  ElectionWonTrace,
  GroupTrace,
  HeartbeatTrace,
  LockAcquireTrace,
  LockReleaseTrace,
  TraceBase,
  WatchDispatchTrace,
} from './coordination/tracing.js'
export { silentLogger } from './coordination/logger.js'
export type { Logger, LogFields } from './coordination/logger.js'
export * from './errors.js'
