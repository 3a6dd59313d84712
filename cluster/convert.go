package cluster

import (
	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/wire"
)

// The conversions between actors' types and wire's: wire keeps its own
// types so that the wire format changes only with wire.ProtocolVersion.

func toWire(rec actors.Record) wire.InstanceRecord {
	w := wire.InstanceRecord{App: rec.App, ID: rec.ID, Clock: rec.Version.Clock, Node: rec.Version.Node,
		Deleted: rec.Deleted, Evicted: rec.Evicted}
	if !rec.Deleted && rec.Instance != nil {
		w.Instance = instanceToWire(rec.Instance)
		w.LastRenewal = rec.LastRenewal
	}
	return w
}

func fromWire(w wire.InstanceRecord) actors.Record {
	rec := actors.Record{App: w.App, ID: w.ID, Version: actors.Version{Clock: w.Clock, Node: w.Node},
		Deleted: w.Deleted, Evicted: w.Evicted, LastRenewal: w.LastRenewal}
	if w.Instance != nil {
		rec.Instance = instanceFromWire(w.Instance)
	}
	return rec
}

func versionsToWire(vs []actors.RecordVersion) []wire.RecordVersion {
	out := make([]wire.RecordVersion, len(vs))
	for i, v := range vs {
		out[i] = wire.RecordVersion{ID: v.ID, Clock: v.Version.Clock, Node: v.Version.Node}
	}
	return out
}

func versionsFromWire(ws []wire.RecordVersion) []actors.RecordVersion {
	out := make([]actors.RecordVersion, len(ws))
	for i, w := range ws {
		out[i] = actors.RecordVersion{ID: w.ID, Version: actors.Version{Clock: w.Clock, Node: w.Node}}
	}
	return out
}

func instanceToWire(i *actors.Instance) *wire.InstanceData {
	return &wire.InstanceData{
		InstanceID: i.InstanceID, HostName: i.HostName, App: i.App, IPAddr: i.IPAddr, SID: i.SID,
		Status: string(i.Status), OverriddenStatus: string(i.OverriddenStatus),
		Port:       wire.PortData{Number: i.Port.Number, Enabled: i.Port.Enabled},
		SecurePort: wire.PortData{Number: i.SecurePort.Number, Enabled: i.SecurePort.Enabled},
		CountryID:  i.CountryID,
		DataCenterInfo: wire.DataCenterData{Class: i.DataCenterInfo.Class, Name: i.DataCenterInfo.Name,
			Metadata: i.DataCenterInfo.Metadata},
		LeaseInfo: wire.LeaseData{RenewalIntervalSecs: i.LeaseInfo.RenewalIntervalSecs, DurationSecs: i.LeaseInfo.DurationSecs,
			RegistrationTimestamp: i.LeaseInfo.RegistrationTimestamp, LastRenewalTimestamp: i.LeaseInfo.LastRenewalTimestamp,
			EvictionTimestamp: i.LeaseInfo.EvictionTimestamp, ServiceUpTimestamp: i.LeaseInfo.ServiceUpTimestamp},
		Metadata:     i.Metadata,
		AppGroupName: i.AppGroupName, HomePageURL: i.HomePageURL, StatusPageURL: i.StatusPageURL,
		HealthCheckURL: i.HealthCheckURL, SecureHealthCheckURL: i.SecureHealthCheckURL,
		VIPAddress: i.VIPAddress, SecureVIPAddress: i.SecureVIPAddress,
		IsCoordinatingDiscoveryServer: i.IsCoordinatingDiscoveryServer,
		LastUpdatedTimestamp:          i.LastUpdatedTimestamp, LastDirtyTimestamp: i.LastDirtyTimestamp,
		ActionType: string(i.ActionType), ASGName: i.ASGName,
	}
}

func instanceFromWire(w *wire.InstanceData) *actors.Instance {
	return &actors.Instance{
		InstanceID: w.InstanceID, HostName: w.HostName, App: w.App, IPAddr: w.IPAddr, SID: w.SID,
		Status: actors.LenientStatus(w.Status), OverriddenStatus: actors.LenientStatus(w.OverriddenStatus),
		Port:       actors.Port{Number: w.Port.Number, Enabled: w.Port.Enabled},
		SecurePort: actors.Port{Number: w.SecurePort.Number, Enabled: w.SecurePort.Enabled},
		CountryID:  w.CountryID,
		DataCenterInfo: actors.DataCenterInfo{Class: w.DataCenterInfo.Class, Name: w.DataCenterInfo.Name,
			Metadata: w.DataCenterInfo.Metadata},
		LeaseInfo: actors.LeaseInfo{RenewalIntervalSecs: w.LeaseInfo.RenewalIntervalSecs, DurationSecs: w.LeaseInfo.DurationSecs,
			RegistrationTimestamp: w.LeaseInfo.RegistrationTimestamp, LastRenewalTimestamp: w.LeaseInfo.LastRenewalTimestamp,
			EvictionTimestamp: w.LeaseInfo.EvictionTimestamp, ServiceUpTimestamp: w.LeaseInfo.ServiceUpTimestamp},
		Metadata:     w.Metadata,
		AppGroupName: w.AppGroupName, HomePageURL: w.HomePageURL, StatusPageURL: w.StatusPageURL,
		HealthCheckURL: w.HealthCheckURL, SecureHealthCheckURL: w.SecureHealthCheckURL,
		VIPAddress: w.VIPAddress, SecureVIPAddress: w.SecureVIPAddress,
		IsCoordinatingDiscoveryServer: w.IsCoordinatingDiscoveryServer,
		LastUpdatedTimestamp:          w.LastUpdatedTimestamp, LastDirtyTimestamp: w.LastDirtyTimestamp,
		ActionType: actors.ActionType(w.ActionType), ASGName: w.ASGName,
	}
}
