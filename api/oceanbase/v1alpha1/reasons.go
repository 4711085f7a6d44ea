package v1alpha1

// Conditions and reasons that only OceanBase's kinds use, next to the
// shared ones in api/common (commonv1). Users read them in
// status.conditions, in kubectl get's Reason columns and in kubectl get
// events; docs/oceanbase.md says what each means. They are API: renaming
// one breaks whoever matches on it.

// OBCluster's conditions and the reasons of its Bootstrapped, Ready and
// Progressing conditions.
const (
	// ConditionBootstrapped is True once OceanBase is bootstrapped.
	ConditionBootstrapped = "Bootstrapped"
	// ConditionStoresLost is True while OceanBase lists servers whose
	// observer lost its store.
	ConditionStoresLost = "StoresLost"

	ReasonWaitingForObservers = "WaitingForObservers"
	ReasonBootstrapping       = "Bootstrapping"
	ReasonBootstrapped        = "Bootstrapped"
	ReasonUnreachable         = "OceanBaseUnreachable"
	ReasonServersNotServing   = "ServersNotServing"
	ReasonServersLeaving      = "ServersLeaving"
	ReasonZonesChanging       = "ZonesChanging"
	ReasonParametersDrifted   = "ParametersDrifted"
	// ReasonZoneRemovalHeld is Ready's reason while a zone removal waits
	// for user tenants to leave the zone.
	ReasonZoneRemovalHeld = "ZoneRemovalHeld"

	// Reasons of StoresLost.
	ReasonNoStoreLost  = "NoStoreLost"
	ReasonRecovering   = "Recovering"
	ReasonMajorityLost = "MajorityLost"
)

// Reasons of OBParameter's conditions.
const (
	ReasonParameterApplied  = "ParameterApplied"
	ReasonParameterApplying = "ParameterApplying"
	ReasonParameterDrifted  = "ParameterDrifted"
	ReasonRestartRequired   = "RestartRequired"
	ReasonNoServers         = "NoServers"
)

// Reasons of OBTenant's conditions.
const (
	ReasonTenantCreating   = "TenantCreating"
	ReasonTenantMissing    = "TenantMissing"
	ReasonTenantDropping   = "TenantDropping"
	ReasonLocalityChanging = "LocalityChanging"
	ReasonUnitsNotActive   = "UnitsNotActive"
	ReasonTenantDrifted    = "TenantDrifted"
	// ReasonTenantRestoring is Ready's reason while OceanBase restores the
	// tenant (its OBTenantRestore says how far).
	ReasonTenantRestoring = "TenantRestoring"
)

// Reasons of OBTenantRestore's conditions (ReasonTenantExists also of an
// OBTenant to be restored into a tenant that exists).
const (
	ReasonRestoring     = "Restoring"
	ReasonRestoreFailed = "RestoreFailed"
	ReasonTenantExists  = "TenantExists"
)

// Reasons of OBTenantOperation's Ready condition.
const (
	ReasonOperationRunning = "OperationRunning"
	ReasonOperationAborted = "OperationAborted"
)

// Reasons of OBTenantBackupPolicy's and OBTenantBackup's conditions.
const (
	ReasonTenantNotFound      = "TenantNotFound"
	ReasonDestinationChanging = "DestinationChanging"
	ReasonArchiveNotRunning   = "ArchiveNotRunning"
	ReasonArchiveSuspended    = "ArchiveSuspended"
	ReasonCredentialsMissing  = "CredentialsMissing"
	ReasonBackupQueued        = "BackupQueued"
	ReasonBackupRunning       = "BackupRunning"
	ReasonBackupFailed        = "BackupFailed"
	ReasonBackupCanceled      = "BackupCanceled"
)

// Reasons of the OBZone and OBServer views' Ready condition (and of the
// OBParameter whose server is unknown).
const (
	ReasonNotBootstrapped    = "NotBootstrapped"
	ReasonNotInCluster       = "NotInCluster"
	ReasonZoneNotActive      = "ZoneNotActive"
	ReasonZoneServing        = "ZoneServing"
	ReasonZoneRemoving       = "ZoneRemoving"
	ReasonPodMissing         = "PodMissing"
	ReasonPodNotReady        = "PodNotReady"
	ReasonServerUnknown      = "ServerUnknown"
	ReasonServerNotActive    = "ServerNotActive"
	ReasonServerNotServing   = "ServerNotServing"
	ReasonServerServing      = "ServerServing"
	ReasonClusterUnreachable = "ClusterUnreachable"
)

// Reasons of the Events OceanBase's controllers record, next to the
// shared ones in api/common. Every one is of type Normal except
// EventStoreLost, EventBackupSkipped, EventBackupFailed and
// EventRestoreFailed, Warnings.
const (
	// Servers and zones of an OBCluster.
	EventServerAdded    = "ServerAdded"
	EventDeletingServer = "DeletingServer"
	EventStoreLost      = "StoreLost"
	EventZoneAdded      = "ZoneAdded"
	EventZonesAdded     = "ZonesAdded"
	EventZoneDeleted    = "ZoneDeleted"
	EventZonesRemoved   = "ZonesRemoved"
	EventUpgradingZone  = "UpgradingZone"
	EventUpgraded       = "Upgraded"

	// Tenants.
	EventTenantCreated  = "TenantCreated"
	EventZonesChanging  = "ZonesChanging"
	EventUnitNumChanged = "UnitNumChanged"
	EventDroppingTenant = "DroppingTenant"
	EventVariableSet    = "VariableSet"

	// Parameters.
	EventParameterSet = "ParameterSet"

	// Backups: a policy's archive and schedules, and one backup's job.
	EventArchiveStarted   = "ArchiveStarted"
	EventArchiveStopped   = "ArchiveStopped"
	EventArchiveSuspended = "ArchiveSuspended"
	EventDestinationSet   = "DestinationSet"
	EventDeletePolicySet  = "DeletePolicySet"
	EventBackupScheduled  = "BackupScheduled"
	EventBackupSkipped    = "BackupSkipped"
	EventBackupStarted    = "BackupStarted"
	EventBackupCompleted  = "BackupCompleted"
	EventBackupFailed     = "BackupFailed"
	EventBackupCanceled   = "BackupCanceled"

	// Restores.
	EventRestoreStarted   = "RestoreStarted"
	EventRestoreCompleted = "RestoreCompleted"
	EventRestoreFailed    = "RestoreFailed"
	EventTenantActivated  = "TenantActivated"

	// Tenant operations.
	EventSwitchedOver     = "SwitchedOver"
	EventPasswordChanged  = "PasswordChanged"
	EventTenantUpgrading  = "TenantUpgrading"
	EventTenantUpgraded   = "TenantUpgraded"
	EventReplayingArchive = "ReplayingArchive"
)
