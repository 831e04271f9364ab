// Command gen-kube-protobuf writes src/formats/kube_protobuf_schema.rs: for the Kubernetes kinds
// mesh-doctor reads as protobuf (Pod, Service, Namespace, and the Status of an error), every message's fields with their
// protobuf field numbers, their JSON names and what the JSON form makes of a zero value. The
// facts come from the Go types of k8s.io/api by reflection (their `protobuf` and `json` tags), so
// the table is exactly what the API server's encoders use.
//
// Usage: (cd scripts/gen-kube-protobuf && go run .) > src/formats/kube_protobuf_schema.rs
package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type field struct {
	number   int
	json     string
	kind     string
	repeated bool
	isMap    bool
	omitZero bool
	inline   bool
}

type message struct {
	name   string
	fields []field
}

var (
	messages []*message
	index    = map[reflect.Type]int{}
)

// special types: their JSON form is not their fields'.
var special = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):          "Time",
	reflect.TypeOf(metav1.MicroTime{}):     "MicroTime",
	reflect.TypeOf(resource.Quantity{}):    "Quantity",
	reflect.TypeOf(intstr.IntOrString{}):   "IntOrString",
	reflect.TypeOf(metav1.FieldsV1{}):      "Json",
	reflect.TypeOf(runtime.RawExtension{}): "Json",
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gen-kube-protobuf: "+format+"\n", args...)
	os.Exit(1)
}

// kindOf: the table's kind of a value of type t (not a pointer, slice or map).
func kindOf(t reflect.Type) string {
	if s, ok := special[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return "String"
	case reflect.Bool:
		return "Bool"
	case reflect.Int32:
		return "Int32"
	case reflect.Int64, reflect.Int:
		return "Int64"
	case reflect.Struct:
		return fmt.Sprintf("Message(%d)", messageOf(t))
	}
	fail("unsupported type %s", t)
	return ""
}

func messageOf(t reflect.Type) int {
	if i, ok := index[t]; ok {
		return i
	}
	m := &message{name: t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:] + "." + t.Name()}
	i := len(messages)
	messages = append(messages, m)
	index[t] = i
	for n := 0; n < t.NumField(); n++ {
		sf := t.Field(n)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		number, err := strconv.Atoi(parts[1])
		if err != nil {
			fail("%s.%s: protobuf tag %q", t, sf.Name, tag)
		}
		jsonTag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(jsonTag, ",")
		if name == "-" {
			continue
		}
		f := field{number: number, json: name}
		f.inline = name == "" && strings.Contains(opts, "inline")
		if name == "" && !f.inline {
			fail("%s.%s: no JSON name", t, sf.Name)
		}
		omitEmpty := strings.Contains(","+opts+",", ",omitempty,")
		ft := sf.Type
		pointer := false
		if ft.Kind() == reflect.Pointer {
			pointer = true
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8 && special[ft] == "":
			fail("%s.%s: bytes (base64 in JSON) are not supported", t, sf.Name)
		case ft.Kind() == reflect.Slice:
			f.repeated = true
			f.kind = kindOf(ft.Elem())
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				fail("%s.%s: map key %s", t, sf.Name, ft.Key())
			}
			f.isMap = true
			f.kind = kindOf(ft.Elem())
		default:
			f.kind = kindOf(ft)
		}
		scalar := f.kind == "String" || f.kind == "Bool" || f.kind == "Int32" || f.kind == "Int64"
		f.omitZero = !pointer && omitEmpty && scalar && !f.repeated && !f.isMap
		if t == reflect.TypeOf(metav1.ObjectMeta{}) && name == "managedFields" {
			// Never read; the JSON path drops them too.
			f.kind = "Skip"
			f.repeated = false
		}
		m.fields = append(m.fields, f)
	}
	sort.Slice(m.fields, func(a, b int) bool { return m.fields[a].number < m.fields[b].number })
	return i
}

func main() {
	roots := []struct {
		name string
		t    reflect.Type
	}{
		{"POD", reflect.TypeOf(corev1.Pod{})},
		{"SERVICE", reflect.TypeOf(corev1.Service{})},
		{"NAMESPACE", reflect.TypeOf(corev1.Namespace{})},
		{"STATUS", reflect.TypeOf(metav1.Status{})},
		{"NODE", reflect.TypeOf(corev1.Node{})},
		{"EVENT", reflect.TypeOf(corev1.Event{})},
		{"DEPLOYMENT", reflect.TypeOf(appsv1.Deployment{})},
		{"STATEFUL_SET", reflect.TypeOf(appsv1.StatefulSet{})},
		{"DAEMON_SET", reflect.TypeOf(appsv1.DaemonSet{})},
		{"CRON_JOB", reflect.TypeOf(batchv1.CronJob{})},
		{"ENDPOINT_SLICE", reflect.TypeOf(discoveryv1.EndpointSlice{})},
		{"NETWORK_POLICY", reflect.TypeOf(networkingv1.NetworkPolicy{})},
		{"POD_DISRUPTION_BUDGET", reflect.TypeOf(policyv1.PodDisruptionBudget{})},
	}
	var consts []string
	for _, r := range roots {
		consts = append(consts, fmt.Sprintf("pub const %s: Root = Root { messages: MESSAGES, index: %d };", r.name, messageOf(r.t)))
	}
	fmt.Println("// @generated by scripts/gen-kube-protobuf (go run .) from the Go types of k8s.io/api " + version())
	fmt.Println("// and k8s.io/apimachinery: their `protobuf` and `json` struct tags. Do not edit.")
	fmt.Println()
	fmt.Println("use super::kube_protobuf::{Field, Kind, Message, Root};")
	fmt.Println()
	for _, c := range consts {
		fmt.Println(c)
	}
	fmt.Println()
	fmt.Println("// One message per line: its Go type, then each field's number, JSON name, kind and flags.")
	fmt.Println("pub static MESSAGES: &[Message] = &[")
	for _, m := range messages {
		var fields []string
		for _, f := range m.fields {
			text := fmt.Sprintf("Field::new(%d, %q, Kind::%s)", f.number, f.json, f.kind)
			if f.repeated {
				text += ".repeated()"
			}
			if f.isMap {
				text += ".map()"
			}
			if f.omitZero {
				text += ".omit_zero()"
			}
			if f.inline {
				text += ".inline()"
			}
			fields = append(fields, text)
		}
		fmt.Printf("    Message { name: %q, fields: &[%s] },\n", m.name, strings.Join(fields, ", "))
	}
	fmt.Println("];")
}

func version() string {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		fail("%v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "k8s.io/api" {
			return fields[1]
		}
	}
	return "(version unknown)"
}
