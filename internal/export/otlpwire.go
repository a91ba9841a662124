package export

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The OTLP protobuf encoding of the OTLP writer's spans, from their OTLP/JSON
// form (the maps the writer builds), for OTLP/HTTP binary and OTLP/gRPC.
// Field numbers are those of opentelemetry-proto's
// collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto and resource/v1/resource.proto; the wire format is
// protobuf's (varints, length-delimited fields, little-endian fixed64).
// TestEncodeRequestDecodes reads the output back with the generated OTLP
// types.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, field, wire int) []byte {
	return appendVarint(b, uint64(field)<<3|uint64(wire))
}

func appendBytesField(b []byte, field int, data []byte) []byte {
	b = appendTag(b, field, wireBytes)
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

func appendStringField(b []byte, field int, s string) []byte {
	if s == "" {
		return b // proto3: the default is not written
	}
	b = appendTag(b, field, wireBytes)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(appendTag(b, field, wireVarint), v)
}

func appendFixed64Field(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

// encodeRequest is the ExportTraceServiceRequest holding spans (OTLP/JSON
// form) under one resource (its attributes) and the scope rpctap 1.
func encodeRequest(resource []any, spans []map[string]any) ([]byte, error) {
	var scope []byte
	scope = appendBytesField(scope, 1, appendStringField(appendStringField(nil, 1, "rpctap"), 2, "1")) // ScopeSpans.scope
	for _, sp := range spans {
		enc, err := encodeSpan(sp)
		if err != nil {
			return nil, err
		}
		scope = appendBytesField(scope, 2, enc) // ScopeSpans.spans
	}
	var res []byte
	for _, a := range resource {
		kv, err := encodeKeyValue(a)
		if err != nil {
			return nil, err
		}
		res = appendBytesField(res, 1, kv) // Resource.attributes
	}
	var rs []byte
	rs = appendBytesField(rs, 1, res)        // ResourceSpans.resource
	rs = appendBytesField(rs, 2, scope)      // ResourceSpans.scope_spans
	return appendBytesField(nil, 1, rs), nil // ExportTraceServiceRequest.resource_spans
}

// encodeSpan is one trace.v1.Span.
func encodeSpan(m map[string]any) ([]byte, error) {
	var b []byte
	for _, f := range []struct {
		key   string
		field int
		n     int
	}{{"traceId", 1, 16}, {"spanId", 2, 8}, {"parentSpanId", 4, 8}} {
		v, ok := m[f.key]
		if !ok {
			continue
		}
		s, _ := v.(string)
		id, err := hex.DecodeString(s)
		if err != nil || len(id) != f.n {
			return nil, fmt.Errorf("span %s %q is not %d hex bytes", f.key, s, f.n)
		}
		b = appendBytesField(b, f.field, id)
	}
	name, _ := m["name"].(string)
	b = appendStringField(b, 5, name)
	kind, err := number(m["kind"])
	if err != nil {
		return nil, fmt.Errorf("span kind: %v", err)
	}
	b = appendVarintField(b, 6, uint64(kind))
	for _, f := range []struct {
		key   string
		field int
	}{{"startTimeUnixNano", 7}, {"endTimeUnixNano", 8}} {
		t, err := number(m[f.key])
		if err != nil {
			return nil, fmt.Errorf("span %s: %v", f.key, err)
		}
		b = appendFixed64Field(b, f.field, uint64(t))
	}
	for _, a := range list(m["attributes"]) {
		kv, err := encodeKeyValue(a)
		if err != nil {
			return nil, err
		}
		b = appendBytesField(b, 9, kv)
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) > 0 {
		code, err := number(st["code"])
		if err != nil {
			return nil, fmt.Errorf("span status code: %v", err)
		}
		msg, _ := st["message"].(string)
		b = appendBytesField(b, 15, appendVarintField(appendStringField(nil, 2, msg), 3, uint64(code)))
	}
	return b, nil
}

// encodeKeyValue is one common.v1.KeyValue.
func encodeKeyValue(a any) ([]byte, error) {
	kv, _ := a.(map[string]any)
	k, _ := kv["key"].(string)
	v, err := encodeAnyValue(kv["value"])
	if err != nil {
		return nil, fmt.Errorf("attribute %s: %v", k, err)
	}
	return appendBytesField(appendStringField(nil, 1, k), 2, v), nil
}

// encodeAnyValue is one common.v1.AnyValue: the oneof member its JSON form
// names.
func encodeAnyValue(a any) ([]byte, error) {
	v, _ := a.(map[string]any)
	for key, x := range v {
		switch key {
		case "stringValue":
			s, _ := x.(string)
			return appendBytesField(nil, 1, []byte(s)), nil
		case "boolValue":
			t, _ := x.(bool)
			n := uint64(0)
			if t {
				n = 1
			}
			return appendVarint(appendTag(nil, 2, wireVarint), n), nil
		case "intValue":
			n, err := number(x)
			if err != nil {
				return nil, err
			}
			return appendVarint(appendTag(nil, 3, wireVarint), uint64(n)), nil
		case "doubleValue":
			f, _ := x.(float64)
			return binary.LittleEndian.AppendUint64(appendTag(nil, 4, wireFixed64), math.Float64bits(f)), nil
		case "arrayValue", "kvlistValue":
			inner, _ := x.(map[string]any)
			var arr []byte
			for _, e := range list(inner["values"]) {
				var enc []byte
				var err error
				if key == "arrayValue" {
					enc, err = encodeAnyValue(e)
				} else {
					enc, err = encodeKeyValue(e)
				}
				if err != nil {
					return nil, err
				}
				arr = appendBytesField(arr, 1, enc)
			}
			field := 5
			if key == "kvlistValue" {
				field = 6
			}
			return appendBytesField(nil, field, arr), nil
		case "bytesValue":
			s, _ := x.(string)
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, err
			}
			return appendBytesField(nil, 7, raw), nil
		}
	}
	return nil, nil // an empty AnyValue
}

// list is a JSON array as maps ([]any from decoding, []map from the writer).
func list(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []map[string]any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
		return out
	}
	return nil
}

// number is an integer of the OTLP/JSON form: a JSON number, or a decimal
// string (how OTLP/JSON writes 64-bit integers).
func number(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("%v is not an integer", v)
}

// protoField is the first length-delimited field number field of a
// protobuf message, nil when absent or when data is not protobuf.
func protoField(data []byte, field int) []byte {
	var out []byte
	walkProto(data, func(num, wire int, v uint64, b []byte) bool {
		if num == field && wire == wireBytes {
			out = b
			return false
		}
		return true
	})
	return out
}

// protoVarint is the first varint field number field.
func protoVarint(data []byte, field int) (uint64, bool) {
	var out uint64
	var found bool
	walkProto(data, func(num, wire int, v uint64, b []byte) bool {
		if num == field && wire == wireVarint {
			out, found = v, true
			return false
		}
		return true
	})
	return out, found
}

// walkProto calls fn for each field of a protobuf message until fn returns
// false or the data ends or stops making sense.
func walkProto(data []byte, fn func(num, wire int, v uint64, b []byte) bool) {
	for len(data) > 0 {
		tag, n := binary.Uvarint(data)
		if n <= 0 {
			return
		}
		data = data[n:]
		num, wire := int(tag>>3), int(tag&7)
		var v uint64
		var b []byte
		switch wire {
		case wireVarint:
			v, n = binary.Uvarint(data)
			if n <= 0 {
				return
			}
			data = data[n:]
		case wireFixed64:
			if len(data) < 8 {
				return
			}
			v, data = binary.LittleEndian.Uint64(data), data[8:]
		case wireBytes:
			l, n := binary.Uvarint(data)
			if n <= 0 || l > uint64(len(data)-n) {
				return
			}
			b, data = data[n:n+int(l)], data[n+int(l):]
		case 5: // fixed32
			if len(data) < 4 {
				return
			}
			v, data = uint64(binary.LittleEndian.Uint32(data)), data[4:]
		default:
			return
		}
		if !fn(num, wire, v, b) {
			return
		}
	}
}
