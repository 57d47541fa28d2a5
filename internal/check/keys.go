package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-llm/sluice/internal/nearest"
)

// words splits a space-separated list into a set.
func words(s string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// execKeys are the settings of systemd.exec(5), systemd.kill(5) and
// systemd.resource-control(5), which [Service] takes.
const execKeys = `WorkingDirectory RootDirectory RootImage RootImageOptions RootEphemeral RootHash RootHashSignature
RootVerity RootImagePolicy MountImagePolicy ExtensionImagePolicy MountAPIVFS ProtectProc ProcSubset BindPaths
BindReadOnlyPaths MountImages ExtensionImages ExtensionDirectories User Group DynamicUser SupplementaryGroups
SetLoginEnvironment PAMName CapabilityBoundingSet AmbientCapabilities NoNewPrivileges SecureBits SELinuxContext
AppArmorProfile SmackProcessLabel LimitCPU LimitFSIZE LimitDATA LimitSTACK LimitCORE LimitRSS LimitNOFILE LimitAS
LimitNPROC LimitMEMLOCK LimitLOCKS LimitSIGPENDING LimitMSGQUEUE LimitNICE LimitRTPRIO LimitRTTIME UMask
CoredumpFilter KeyringMode OOMScoreAdjust TimerSlackNSec Personality IgnoreSIGPIPE Nice CPUSchedulingPolicy
CPUSchedulingPriority CPUSchedulingResetOnFork CPUAffinity NUMAPolicy NUMAMask IOSchedulingClass
IOSchedulingPriority ProtectSystem ProtectHome RuntimeDirectory StateDirectory CacheDirectory LogsDirectory
ConfigurationDirectory RuntimeDirectoryMode StateDirectoryMode CacheDirectoryMode LogsDirectoryMode
ConfigurationDirectoryMode RuntimeDirectoryPreserve TimeoutCleanSec ReadWritePaths ReadOnlyPaths InaccessiblePaths
ExecPaths NoExecPaths TemporaryFileSystem PrivateTmp PrivateDevices PrivateNetwork NetworkNamespacePath
PrivateIPC IPCNamespacePath MemoryKSM PrivateUsers ProtectHostname ProtectClock ProtectKernelTunables
ProtectKernelModules ProtectKernelLogs ProtectControlGroups RestrictAddressFamilies RestrictFileSystems
RestrictNamespaces LockPersonality MemoryDenyWriteExecute RestrictRealtime RestrictSUIDSGID RemoveIPC
PrivateMounts MountFlags SystemCallFilter SystemCallErrorNumber SystemCallArchitectures SystemCallLog
Environment EnvironmentFile PassEnvironment UnsetEnvironment StandardInput StandardOutput StandardError
StandardInputText StandardInputData LogLevelMax LogExtraFields LogRateLimitIntervalSec LogRateLimitBurst
LogFilterPatterns LogNamespace SyslogIdentifier SyslogFacility SyslogLevel SyslogLevelPrefix TTYPath TTYReset
TTYVHangup TTYRows TTYColumns TTYVTDisallocate LoadCredential LoadCredentialEncrypted ImportCredential
SetCredential SetCredentialEncrypted UtmpIdentifier UtmpMode KillMode KillSignal RestartKillSignal SendSIGHUP
SendSIGKILL FinalKillSignal WatchdogSignal CPUAccounting CPUWeight StartupCPUWeight CPUQuota CPUQuotaPeriodSec
AllowedCPUs StartupAllowedCPUs AllowedMemoryNodes StartupAllowedMemoryNodes MemoryAccounting MemoryMin MemoryLow
StartupMemoryLow DefaultStartupMemoryLow MemoryHigh StartupMemoryHigh MemoryMax StartupMemoryMax MemorySwapMax
StartupMemorySwapMax MemoryZSwapMax StartupMemoryZSwapMax MemoryZSwapWriteback TasksAccounting TasksMax
IOAccounting IOWeight StartupIOWeight IODeviceWeight IOReadBandwidthMax IOWriteBandwidthMax IOReadIOPSMax
IOWriteIOPSMax IODeviceLatencyTargetSec IPAccounting IPAddressAllow IPAddressDeny SocketBindAllow SocketBindDeny
RestrictNetworkInterfaces NFTSet IPIngressFilterPath IPEgressFilterPath BPFProgram DeviceAllow DevicePolicy Slice
Delegate DelegateSubgroup DisableControllers ManagedOOMSwap ManagedOOMMemoryPressure
ManagedOOMMemoryPressureLimit ManagedOOMMemoryPressureDurationSec ManagedOOMPreference MemoryPressureWatch
MemoryPressureThresholdSec CPUShares StartupCPUShares MemoryLimit BlockIOAccounting BlockIOWeight
StartupBlockIOWeight BlockIODeviceWeight BlockIOReadBandwidth BlockIOWriteBandwidth ProtectHostnameEx
PrivatePIDs ProtectControlGroupsEx`

// sectionKeys are the keys systemd knows in each section of a .service or
// .timer unit (systemd.unit(5), systemd.service(5), systemd.timer(5) and
// the exec settings above).
var sectionKeys = map[string]map[string]bool{
	"Unit": words(`Description Documentation Wants Requires Requisite BindsTo PartOf Upholds Conflicts Before After
OnFailure OnSuccess PropagatesReloadTo ReloadPropagatedFrom PropagatesStopTo StopPropagatedFrom JoinsNamespaceOf
RequiresMountsFor WantsMountsFor OnFailureJobMode OnFailureIsolate IgnoreOnIsolate StopWhenUnneeded RefuseManualStart
RefuseManualStop AllowIsolate DefaultDependencies SurviveFinalKillSignal CollectMode FailureAction SuccessAction
FailureActionExitStatus SuccessActionExitStatus JobTimeoutSec JobRunningTimeoutSec JobTimeoutAction
JobTimeoutRebootArgument StartLimitIntervalSec StartLimitInterval StartLimitBurst StartLimitAction RebootArgument
SourcePath ConditionArchitecture ConditionFirmware ConditionVirtualization ConditionHost ConditionKernelCommandLine
ConditionKernelVersion ConditionCredential ConditionEnvironment ConditionSecurity ConditionCapability
ConditionACPower ConditionNeedsUpdate ConditionFirstBoot ConditionPathExists ConditionPathExistsGlob
ConditionPathIsDirectory ConditionPathIsSymbolicLink ConditionPathIsMountPoint ConditionPathIsReadWrite
ConditionPathIsEncrypted ConditionDirectoryNotEmpty ConditionFileNotEmpty ConditionFileIsExecutable ConditionUser
ConditionGroup ConditionControlGroupController ConditionMemory ConditionCPUs ConditionCPUFeature ConditionOSRelease
ConditionMemoryPressure ConditionCPUPressure ConditionIOPressure AssertArchitecture AssertVirtualization AssertHost
AssertKernelCommandLine AssertKernelVersion AssertCredential AssertEnvironment AssertSecurity AssertCapability
AssertACPower AssertNeedsUpdate AssertFirstBoot AssertPathExists AssertPathExistsGlob AssertPathIsDirectory
AssertPathIsSymbolicLink AssertPathIsMountPoint AssertPathIsReadWrite AssertPathIsEncrypted AssertDirectoryNotEmpty
AssertFileNotEmpty AssertFileIsExecutable AssertUser AssertGroup AssertControlGroupController AssertMemory AssertCPUs
AssertCPUFeature AssertOSRelease AssertMemoryPressure AssertCPUPressure AssertIOPressure`),
	"Service": words(`Type ExitType RemainAfterExit GuessMainPID PIDFile BusName ExecStart ExecStartPre ExecStartPost
ExecCondition ExecReload ExecStop ExecStopPost RestartSec RestartSteps RestartMaxDelaySec TimeoutStartSec
TimeoutStopSec TimeoutAbortSec TimeoutSec TimeoutStartFailureMode TimeoutStopFailureMode RuntimeMaxSec
RuntimeRandomizedExtraSec WatchdogSec Restart RestartMode SuccessExitStatus RestartPreventExitStatus
RestartForceExitStatus RootDirectoryStartOnly NonBlocking NotifyAccess Sockets FileDescriptorStoreMax
FileDescriptorStorePreserve USBFunctionDescriptors USBFunctionStrings OOMPolicy OpenFile ReloadSignal
StartLimitIntervalSec StartLimitBurst StartLimitAction FailureAction PermissionsStartOnly ` + execKeys),
	"Timer": words(`OnActiveSec OnBootSec OnStartupSec OnUnitActiveSec OnUnitInactiveSec OnCalendar AccuracySec
RandomizedDelaySec RandomizedOffsetSec FixedRandomDelay DeferReactivation OnClockChange OnTimezoneChange Unit
Persistent WakeSystem RemainAfterElapse`),
	"Install": words(`Alias WantedBy RequiredBy UpheldBy Also DefaultInstance`),
}

// unknownKey returns the finding for an assignment systemd does not know
// in its section, or false. Keys starting with X- are allowed, as systemd
// allows them; sections Sluice does not know are not judged.
func unknownKey(unitPath string, e entry) (finding, bool) {
	known, judged := sectionKeys[e.Section]
	if !judged || known[e.Key] || strings.HasPrefix(e.Key, "X-") {
		return finding{}, false
	}
	fix := fmt.Sprintf("check the spelling against systemd.directives(7), or name it X-%s to keep it as a note", e.Key)
	if near := nearest.Name(e.Key, slices.Collect(maps.Keys(known))); near != "" {
		fix = fmt.Sprintf("did you mean %s=? (keys are case-sensitive)", near)
	}
	return finding{File: e.File, Line: e.Line, Unit: unitName(unitPath), Setting: e.Key, Value: e.Value,
		Problem: fmt.Sprintf("unknown key %s= in [%s]: systemd ignores the line", e.Key, e.Section),
		Fix:     fix}, true
}

// badCalendar is the finding for an OnCalendar= systemd refuses.
func badCalendar(unitPath string, e entry, err error) finding {
	return finding{File: e.File, Line: e.Line, Unit: unitName(unitPath), Setting: e.Key, Value: e.Value,
		Problem: fmt.Sprintf("OnCalendar=%s is not a calendar event (%v): systemd ignores the line, so the timer never fires on it", e.Value, err),
		Fix:     "write e.g. OnCalendar=daily, *-*-* 02:00:00 or Mon..Fri 09:00, and test it with systemd-analyze calendar"}
}
