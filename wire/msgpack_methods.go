package wire

import "github.com/vmihailenco/msgpack/v5"

// The hand-written msgpack methods of every message struct (see
// msgpack_codec.go for the rules they follow). For each type: its field
// names in wire order (= declaration order in msg.go), its encoder and its
// per-field decoder. Adding, removing or reordering a field of a struct in
// msg.go means changing its three parts here too (and ProtocolVersion); the
// tests fail until they agree with reflection again.

// Method-less copies of the message types, for reflectCodec.
type (
	recordsReflect        Records
	instanceRecordReflect InstanceRecord
	instanceDataReflect   InstanceData
	portDataReflect       PortData
	dataCenterDataReflect DataCenterData
	leaseDataReflect      LeaseData
	renewalsReflect       Renewals
	renewalReflect        Renewal
	digestReflect         Digest
	appDigestReflect      AppDigest
	syncRequestReflect    SyncRequest
	syncAppReflect        SyncApp
	recordVersionReflect  RecordVersion
	loadReflect           Load
)

// Every message struct has both methods.
var (
	_ msgpack.CustomEncoder = Records{}
	_ msgpack.CustomDecoder = (*Records)(nil)
	_ msgpack.CustomEncoder = InstanceRecord{}
	_ msgpack.CustomDecoder = (*InstanceRecord)(nil)
	_ msgpack.CustomEncoder = InstanceData{}
	_ msgpack.CustomDecoder = (*InstanceData)(nil)
	_ msgpack.CustomEncoder = PortData{}
	_ msgpack.CustomDecoder = (*PortData)(nil)
	_ msgpack.CustomEncoder = DataCenterData{}
	_ msgpack.CustomDecoder = (*DataCenterData)(nil)
	_ msgpack.CustomEncoder = LeaseData{}
	_ msgpack.CustomDecoder = (*LeaseData)(nil)
	_ msgpack.CustomEncoder = Renewals{}
	_ msgpack.CustomDecoder = (*Renewals)(nil)
	_ msgpack.CustomEncoder = Renewal{}
	_ msgpack.CustomDecoder = (*Renewal)(nil)
	_ msgpack.CustomEncoder = Digest{}
	_ msgpack.CustomDecoder = (*Digest)(nil)
	_ msgpack.CustomEncoder = AppDigest{}
	_ msgpack.CustomDecoder = (*AppDigest)(nil)
	_ msgpack.CustomEncoder = SyncRequest{}
	_ msgpack.CustomDecoder = (*SyncRequest)(nil)
	_ msgpack.CustomEncoder = SyncApp{}
	_ msgpack.CustomDecoder = (*SyncApp)(nil)
	_ msgpack.CustomEncoder = RecordVersion{}
	_ msgpack.CustomDecoder = (*RecordVersion)(nil)
	_ msgpack.CustomEncoder = Load{}
	_ msgpack.CustomDecoder = (*Load)(nil)
)

// recordsFields names the fields of Records, in wire order.
var recordsFields = [...]string{"Records", "Done", "SentAt"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r Records) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := recordsReflect(r)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	r.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *Records) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*recordsReflect)(r))
	}
	return decodeStruct(d, r, recordsFields[:])
}

// writeTo encodes r as the array of its fields.
func (r *Records) writeTo(w *writer) {
	w.arrayLen(len(recordsFields))
	writeStructs(w, r.Records)
	w.strs(r.Done)
	w.int(r.SentAt)
}

// decodeField decodes field i of r (readable).
func (r *Records) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		return decodeStructs(d, &r.Records, instanceRecordFields[:])
	case 1:
		return d.Decode(&r.Done)
	case 2:
		r.SentAt, err = d.DecodeInt64()
		return err
	}
	return nil
}

// recordsV2 is Records as version 2 framed it: Records and Done, no SentAt
// (a field added in version 3). Decode and EncodeVersion use it for
// version-2 frames (bodyAt).
type recordsV2 Records

// recordsV2Fields is how many of recordsFields version 2 has.
const recordsV2Fields = 2

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r recordsV2) EncodeMsgpack(e *msgpack.Encoder) error {
	w := writer{e: e}
	w.arrayLen(recordsV2Fields)
	writeStructs(&w, r.Records)
	w.strs(r.Done)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *recordsV2) DecodeMsgpack(d *msgpack.Decoder) error {
	return decodeStruct(d, r, recordsFields[:recordsV2Fields])
}

// decodeField decodes field i of r (readable).
func (r *recordsV2) decodeField(d *msgpack.Decoder, i int) error {
	return (*Records)(r).decodeField(d, i)
}

// instanceRecordFields names the fields of InstanceRecord, in wire order.
var instanceRecordFields = [...]string{"App", "ID", "Clock", "Node", "Deleted", "Instance", "Evicted", "LastRenewal"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r InstanceRecord) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := instanceRecordReflect(r)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	r.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *InstanceRecord) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*instanceRecordReflect)(r))
	}
	return decodeStruct(d, r, instanceRecordFields[:])
}

// writeTo encodes r as the array of its fields.
func (r *InstanceRecord) writeTo(w *writer) {
	w.arrayLen(len(instanceRecordFields))
	w.str(r.App)
	w.str(r.ID)
	w.uint(r.Clock)
	w.str(r.Node)
	w.boolean(r.Deleted)
	if r.Instance == nil {
		w.null()
	} else {
		r.Instance.writeTo(w)
	}
	w.boolean(r.Evicted)
	if sabotage == sabotageWideInt && w.err == nil {
		w.err = w.e.EncodeInt64(r.LastRenewal)
		return
	}
	w.int(r.LastRenewal)
}

// decodeField decodes field i of r (readable).
func (r *InstanceRecord) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		r.App, err = d.DecodeString()
	case 1:
		r.ID, err = d.DecodeString()
	case 2:
		r.Clock, err = d.DecodeUint64()
	case 3:
		r.Node, err = d.DecodeString()
	case 4:
		r.Deleted, err = d.DecodeBool()
	case 5:
		err = decodeInstance(d, &r.Instance)
	case 6:
		r.Evicted, err = d.DecodeBool()
	case 7:
		r.LastRenewal, err = d.DecodeInt64()
	}
	return err
}

// instanceDataFields names the fields of InstanceData, in wire order.
var instanceDataFields = [...]string{
	"InstanceID",
	"HostName",
	"App",
	"IPAddr",
	"SID",
	"Status",
	"OverriddenStatus",
	"Port",
	"SecurePort",
	"CountryID",
	"DataCenterInfo",
	"LeaseInfo",
	"Metadata",
	"AppGroupName",
	"HomePageURL",
	"StatusPageURL",
	"HealthCheckURL",
	"SecureHealthCheckURL",
	"VIPAddress",
	"SecureVIPAddress",
	"IsCoordinatingDiscoveryServer",
	"LastUpdatedTimestamp",
	"LastDirtyTimestamp",
	"ActionType",
	"ASGName",
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r InstanceData) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := instanceDataReflect(r)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	r.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *InstanceData) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*instanceDataReflect)(r))
	}
	return decodeStruct(d, r, instanceDataFields[:])
}

// writeTo encodes r as the array of its fields.
func (r *InstanceData) writeTo(w *writer) {
	w.arrayLen(len(instanceDataFields))
	w.str(r.InstanceID)
	w.str(r.HostName)
	w.str(r.App)
	w.str(r.IPAddr)
	w.str(r.SID)
	w.str(r.Status)
	w.str(r.OverriddenStatus)
	r.Port.writeTo(w)
	r.SecurePort.writeTo(w)
	w.int(int64(r.CountryID))
	r.DataCenterInfo.writeTo(w)
	r.LeaseInfo.writeTo(w)
	w.strMap(r.Metadata)
	w.str(r.AppGroupName)
	w.str(r.HomePageURL)
	w.str(r.StatusPageURL)
	w.str(r.HealthCheckURL)
	w.str(r.SecureHealthCheckURL)
	w.str(r.VIPAddress)
	w.str(r.SecureVIPAddress)
	w.boolean(r.IsCoordinatingDiscoveryServer)
	w.int(r.LastUpdatedTimestamp)
	w.int(r.LastDirtyTimestamp)
	w.str(r.ActionType)
	w.str(r.ASGName)
}

// decodeField decodes field i of r (readable).
func (r *InstanceData) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		r.InstanceID, err = d.DecodeString()
	case 1:
		r.HostName, err = d.DecodeString()
	case 2:
		r.App, err = d.DecodeString()
	case 3:
		r.IPAddr, err = d.DecodeString()
	case 4:
		r.SID, err = d.DecodeString()
	case 5:
		r.Status, err = d.DecodeString()
	case 6:
		r.OverriddenStatus, err = d.DecodeString()
	case 7:
		err = decodeStruct(d, &r.Port, portDataFields[:])
	case 8:
		err = decodeStruct(d, &r.SecurePort, portDataFields[:])
	case 9:
		r.CountryID, err = d.DecodeInt()
	case 10:
		err = decodeStruct(d, &r.DataCenterInfo, dataCenterDataFields[:])
	case 11:
		err = decodeStruct(d, &r.LeaseInfo, leaseDataFields[:])
	case 12:
		err = d.Decode(&r.Metadata)
	case 13:
		r.AppGroupName, err = d.DecodeString()
	case 14:
		r.HomePageURL, err = d.DecodeString()
	case 15:
		r.StatusPageURL, err = d.DecodeString()
	case 16:
		r.HealthCheckURL, err = d.DecodeString()
	case 17:
		r.SecureHealthCheckURL, err = d.DecodeString()
	case 18:
		r.VIPAddress, err = d.DecodeString()
	case 19:
		r.SecureVIPAddress, err = d.DecodeString()
	case 20:
		r.IsCoordinatingDiscoveryServer, err = d.DecodeBool()
	case 21:
		r.LastUpdatedTimestamp, err = d.DecodeInt64()
	case 22:
		r.LastDirtyTimestamp, err = d.DecodeInt64()
	case 23:
		r.ActionType, err = d.DecodeString()
	case 24:
		r.ASGName, err = d.DecodeString()
	}
	return err
}

// portDataFields names the fields of PortData, in wire order.
var portDataFields = [...]string{"Number", "Enabled"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (p PortData) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := portDataReflect(p)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	p.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (p *PortData) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*portDataReflect)(p))
	}
	return decodeStruct(d, p, portDataFields[:])
}

// writeTo encodes p as the array of its fields.
func (p *PortData) writeTo(w *writer) {
	w.arrayLen(len(portDataFields))
	w.int(int64(p.Number))
	w.boolean(p.Enabled)
}

// decodeField decodes field i of p (readable).
func (p *PortData) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		p.Number, err = d.DecodeInt()
	case 1:
		p.Enabled, err = d.DecodeBool()
	}
	return err
}

// dataCenterDataFields names the fields of DataCenterData, in wire order.
var dataCenterDataFields = [...]string{"Class", "Name", "Metadata"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (c DataCenterData) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := dataCenterDataReflect(c)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	c.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (c *DataCenterData) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*dataCenterDataReflect)(c))
	}
	return decodeStruct(d, c, dataCenterDataFields[:])
}

// writeTo encodes c as the array of its fields.
func (c *DataCenterData) writeTo(w *writer) {
	w.arrayLen(len(dataCenterDataFields))
	w.str(c.Class)
	w.str(c.Name)
	w.strMap(c.Metadata)
}

// decodeField decodes field i of c (readable).
func (c *DataCenterData) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		c.Class, err = d.DecodeString()
	case 1:
		c.Name, err = d.DecodeString()
	case 2:
		err = d.Decode(&c.Metadata)
	}
	return err
}

// leaseDataFields names the fields of LeaseData, in wire order.
var leaseDataFields = [...]string{
	"RenewalIntervalSecs",
	"DurationSecs",
	"RegistrationTimestamp",
	"LastRenewalTimestamp",
	"EvictionTimestamp",
	"ServiceUpTimestamp",
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (l LeaseData) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := leaseDataReflect(l)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	l.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (l *LeaseData) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*leaseDataReflect)(l))
	}
	return decodeStruct(d, l, leaseDataFields[:])
}

// writeTo encodes l as the array of its fields.
func (l *LeaseData) writeTo(w *writer) {
	w.arrayLen(len(leaseDataFields))
	w.int(int64(l.RenewalIntervalSecs))
	w.int(int64(l.DurationSecs))
	w.int(l.RegistrationTimestamp)
	w.int(l.LastRenewalTimestamp)
	w.int(l.EvictionTimestamp)
	w.int(l.ServiceUpTimestamp)
}

// decodeField decodes field i of l (readable).
func (l *LeaseData) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		l.RenewalIntervalSecs, err = d.DecodeInt()
	case 1:
		l.DurationSecs, err = d.DecodeInt()
	case 2:
		l.RegistrationTimestamp, err = d.DecodeInt64()
	case 3:
		l.LastRenewalTimestamp, err = d.DecodeInt64()
	case 4:
		l.EvictionTimestamp, err = d.DecodeInt64()
	case 5:
		l.ServiceUpTimestamp, err = d.DecodeInt64()
	}
	return err
}

// renewalsFields names the fields of Renewals, in wire order.
var renewalsFields = [...]string{"Renewals"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r Renewals) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := renewalsReflect(r)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	r.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *Renewals) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*renewalsReflect)(r))
	}
	return decodeStruct(d, r, renewalsFields[:])
}

// writeTo encodes r as the array of its fields.
func (r *Renewals) writeTo(w *writer) {
	w.arrayLen(len(renewalsFields))
	writeStructs(w, r.Renewals)
}

// decodeField decodes field i of r (readable).
func (r *Renewals) decodeField(d *msgpack.Decoder, i int) error {
	switch i {
	case 0:
		return decodeStructs(d, &r.Renewals, renewalFields[:])
	}
	return nil
}

// renewalFields names the fields of Renewal, in wire order.
var renewalFields = [...]string{"App", "ID", "Count"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r Renewal) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := renewalReflect(r)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	r.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (r *Renewal) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*renewalReflect)(r))
	}
	return decodeStruct(d, r, renewalFields[:])
}

// writeTo encodes r as the array of its fields.
func (r *Renewal) writeTo(w *writer) {
	w.arrayLen(len(renewalFields))
	w.str(r.App)
	w.str(r.ID)
	w.uint(uint64(r.Count))
}

// decodeField decodes field i of r (readable).
func (r *Renewal) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		r.App, err = d.DecodeString()
	case 1:
		r.ID, err = d.DecodeString()
	case 2:
		r.Count, err = d.DecodeUint32()
	}
	return err
}

// digestFields names the fields of Digest, in wire order.
var digestFields = [...]string{"Node", "Apps", "Reply"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m Digest) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := digestReflect(m)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	m.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *Digest) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*digestReflect)(m))
	}
	return decodeStruct(d, m, digestFields[:])
}

// writeTo encodes m as the array of its fields.
func (m *Digest) writeTo(w *writer) {
	w.arrayLen(len(digestFields))
	w.str(m.Node)
	writeStructs(w, m.Apps)
	w.boolean(m.Reply)
}

// decodeField decodes field i of m (readable).
func (m *Digest) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		m.Node, err = d.DecodeString()
	case 1:
		err = decodeStructs(d, &m.Apps, appDigestFields[:])
	case 2:
		m.Reply, err = d.DecodeBool()
	}
	return err
}

// appDigestFields names the fields of AppDigest, in wire order.
var appDigestFields = [...]string{"App", "Hash", "Count"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (a AppDigest) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := appDigestReflect(a)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	a.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (a *AppDigest) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*appDigestReflect)(a))
	}
	return decodeStruct(d, a, appDigestFields[:])
}

// writeTo encodes a as the array of its fields.
func (a *AppDigest) writeTo(w *writer) {
	w.arrayLen(len(appDigestFields))
	w.str(a.App)
	w.uint(a.Hash)
	w.uint(uint64(a.Count))
}

// decodeField decodes field i of a (readable).
func (a *AppDigest) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		a.App, err = d.DecodeString()
	case 1:
		a.Hash, err = d.DecodeUint64()
	case 2:
		a.Count, err = d.DecodeUint32()
	}
	return err
}

// syncRequestFields names the fields of SyncRequest, in wire order.
var syncRequestFields = [...]string{"Node", "Apps"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m SyncRequest) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := syncRequestReflect(m)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	m.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *SyncRequest) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*syncRequestReflect)(m))
	}
	return decodeStruct(d, m, syncRequestFields[:])
}

// writeTo encodes m as the array of its fields.
func (m *SyncRequest) writeTo(w *writer) {
	w.arrayLen(len(syncRequestFields))
	w.str(m.Node)
	writeStructs(w, m.Apps)
}

// decodeField decodes field i of m (readable).
func (m *SyncRequest) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		m.Node, err = d.DecodeString()
	case 1:
		err = decodeStructs(d, &m.Apps, syncAppFields[:])
	}
	return err
}

// syncAppFields names the fields of SyncApp, in wire order.
var syncAppFields = [...]string{"App", "Have"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (a SyncApp) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := syncAppReflect(a)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	a.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (a *SyncApp) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*syncAppReflect)(a))
	}
	return decodeStruct(d, a, syncAppFields[:])
}

// writeTo encodes a as the array of its fields.
func (a *SyncApp) writeTo(w *writer) {
	w.arrayLen(len(syncAppFields))
	w.str(a.App)
	writeStructs(w, a.Have)
}

// decodeField decodes field i of a (readable).
func (a *SyncApp) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		a.App, err = d.DecodeString()
	case 1:
		err = decodeStructs(d, &a.Have, recordVersionFields[:])
	}
	return err
}

// recordVersionFields names the fields of RecordVersion, in wire order.
var recordVersionFields = [...]string{"ID", "Clock", "Node"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v RecordVersion) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := recordVersionReflect(v)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	v.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *RecordVersion) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*recordVersionReflect)(v))
	}
	return decodeStruct(d, v, recordVersionFields[:])
}

// writeTo encodes v as the array of its fields.
func (v *RecordVersion) writeTo(w *writer) {
	w.arrayLen(len(recordVersionFields))
	if sabotage == sabotageSwapFields {
		w.str(v.Node)
		w.uint(v.Clock)
		w.str(v.ID)
		return
	}
	w.str(v.ID)
	w.uint(v.Clock)
	w.str(v.Node)
}

// decodeField decodes field i of v (readable).
func (v *RecordVersion) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		v.ID, err = d.DecodeString()
	case 1:
		v.Clock, err = d.DecodeUint64()
	case 2:
		v.Node, err = d.DecodeString()
	}
	return err
}

// loadFields names the fields of Load, in wire order.
var loadFields = [...]string{"Node", "WindowMillis", "Renewals", "Expected", "Engaged", "Reason"}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (m Load) EncodeMsgpack(e *msgpack.Encoder) error {
	if reflectCodec {
		c := loadReflect(m)
		return encodeReflect(e, &c)
	}
	w := writer{e: e}
	m.writeTo(&w)
	return w.err
}

// DecodeMsgpack implements msgpack.CustomDecoder.
func (m *Load) DecodeMsgpack(d *msgpack.Decoder) error {
	if reflectCodec {
		return decodeReflect(d, (*loadReflect)(m))
	}
	return decodeStruct(d, m, loadFields[:])
}

// writeTo encodes m as the array of its fields.
func (m *Load) writeTo(w *writer) {
	w.arrayLen(len(loadFields))
	w.str(m.Node)
	w.int(m.WindowMillis)
	w.int(m.Renewals)
	w.int(m.Expected)
	w.boolean(m.Engaged)
	w.str(m.Reason)
}

// decodeField decodes field i of m (readable).
func (m *Load) decodeField(d *msgpack.Decoder, i int) (err error) {
	switch i {
	case 0:
		m.Node, err = d.DecodeString()
	case 1:
		m.WindowMillis, err = d.DecodeInt64()
	case 2:
		m.Renewals, err = d.DecodeInt64()
	case 3:
		m.Expected, err = d.DecodeInt64()
	case 4:
		m.Engaged, err = d.DecodeBool()
	case 5:
		m.Reason, err = d.DecodeString()
	}
	return err
}
