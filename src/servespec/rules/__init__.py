"""Every rule, in one explicit tuple (``ALL_RULES``) and by id; :mod:`servespec.rules.runner` runs them over a fleet."""

from __future__ import annotations

from servespec.rules.adapters import AdapterConfigMismatch, AdapterRankAboveLimit, AdaptersNotServed
from servespec.rules.base import Rule
from servespec.rules.engine_options import InconsistentEngineOptions, InvalidEngineOptionValue, UnknownEngineOption
from servespec.rules.hardware import (
    DriverTooOld,
    DtypeNotSupported,
    EngineNeedsNewerGpu,
    FormatNotSupported,
    QuantizationNeedsNewerGpu,
)
from servespec.rules.host_native import HostNativeField
from servespec.rules.launch import LaunchWords, ServedNameNotRendered
from servespec.rules.launch_code import InstallAtLaunch, TrustRemoteCode
from servespec.rules.maintenance import UnmaintainedEngine
from servespec.rules.memory import (
    AfterTheKvCache,
    BesideTheModel,
    ContextBeyondModel,
    FewerSequencesThanBatch,
    NoRoomForKvCache,
    SharedGpuOversubscribed,
    UnifiedMemory,
    WeightsDoNotFit,
)
from servespec.rules.model_store import ModelStoreOutsideCache
from servespec.rules.network import ExposedWithoutAuth, PortConflict
from servespec.rules.parallel import (
    EngineRefusesShard,
    HeadsNotDivisible,
    KvHeadsReplicated,
    LayoutNotSupported,
    NotEnoughGpus,
)
from servespec.rules.references import FactsMissing, MissingFile, ModelLockMismatch, StaleFacts, UnknownHost
from servespec.rules.rollout import AllHostsDownAtOnce, HealthTimeoutTooShort, ProxyImageNotAtHand
from servespec.rules.runtime import GpusBusy, ModelCacheTooSmall, NoGpuContainerRuntime
from servespec.rules.schema import MissingField, Suppressions, UnknownField, WrongType, YamlSyntax
from servespec.rules.security import (
    ImageNotPinned,
    InlineSecret,
    ModelPathOutsideRoots,
    RevisionNotPinned,
)
from servespec.rules.speculative import SpeculativeNotRendered
from servespec.rules.topology import AcsBlocksPeerToPeer, KtThreadsVsNuma, ReplicaAcrossNuma, TensorParallelOverPcie

ALL_RULES: tuple[type[Rule], ...] = (
    YamlSyntax,
    UnknownField,
    WrongType,
    MissingField,
    Suppressions,
    UnknownHost,
    MissingFile,
    FactsMissing,
    StaleFacts,
    ModelLockMismatch,
    WeightsDoNotFit,
    NoRoomForKvCache,
    FewerSequencesThanBatch,
    SharedGpuOversubscribed,
    ContextBeyondModel,
    BesideTheModel,
    AfterTheKvCache,
    UnifiedMemory,
    ModelCacheTooSmall,
    HeadsNotDivisible,
    NotEnoughGpus,
    LayoutNotSupported,
    KvHeadsReplicated,
    EngineRefusesShard,
    GpusBusy,
    DtypeNotSupported,
    QuantizationNeedsNewerGpu,
    FormatNotSupported,
    EngineNeedsNewerGpu,
    DriverTooOld,
    NoGpuContainerRuntime,
    ReplicaAcrossNuma,
    AcsBlocksPeerToPeer,
    TensorParallelOverPcie,
    KtThreadsVsNuma,
    UnknownEngineOption,
    InvalidEngineOptionValue,
    InconsistentEngineOptions,
    UnmaintainedEngine,
    HostNativeField,
    ServedNameNotRendered,
    AdaptersNotServed,
    AdapterRankAboveLimit,
    AdapterConfigMismatch,
    SpeculativeNotRendered,
    LaunchWords,
    ModelStoreOutsideCache,
    PortConflict,
    ExposedWithoutAuth,
    InlineSecret,
    ImageNotPinned,
    RevisionNotPinned,
    ModelPathOutsideRoots,
    TrustRemoteCode,
    InstallAtLaunch,
    AllHostsDownAtOnce,
    HealthTimeoutTooShort,
    ProxyImageNotAtHand,
)

RULES_BY_ID: dict[str, type[Rule]] = {rule.id: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_ID", "Rule"]
