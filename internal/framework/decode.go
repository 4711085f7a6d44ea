package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// validatingWebhook is controller-runtime's validating webhook of v, but
// an object that does not decode into T is refused with a 422 naming the
// field that does not: the schema passes any text for a field Go parses
// itself (a metav1.Duration is a string to it), and the decoder's error
// ("time: invalid duration \"soon\"") names none.
func validatingWebhook[T Object](scheme *runtime.Scheme, gk schema.GroupKind, v admission.Validator[T]) *admission.Webhook {
	wh := admission.WithValidator[T](scheme, v)
	wh.Handler = decodeChecked[T]{gk: gk, decoder: admission.NewDecoder(scheme), next: wh.Handler}
	return wh
}

// decodeChecked refuses, naming the field, an object of a create or update
// that does not decode, and hands every other request to next.
type decodeChecked[T Object] struct {
	gk      schema.GroupKind
	decoder admission.Decoder
	next    admission.Handler
}

func (h decodeChecked[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update) && len(req.Object.Raw) > 0 {
		if err := h.decoder.DecodeRaw(req.Object, newObject[T]()); err != nil {
			fe := decodeError(req.Object.Raw, reflect.TypeFor[T]())
			if fe == nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
			status := apierrors.NewInvalid(h.gk, req.Name, field.ErrorList{fe}).Status()
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: ptr.To(status)}}
		}
	}
	return h.next.Handle(ctx, req)
}

// decodeError returns the error of the field of data, a JSON object of Go
// type typ, that does not decode, found by decoding data field by field
// along typ; nil when data decodes or no field is to blame.
func decodeError(data []byte, typ reflect.Type) *field.Error {
	if path, value, err := undecodable(data, typ, nil); path != nil {
		return field.Invalid(path, value, err.Error())
	}
	return nil
}

// undecodable returns the deepest field under path whose JSON data does
// not decode into typ, with its value and the error; nil path when data
// decodes.
func undecodable(data []byte, typ reflect.Type, path *field.Path) (*field.Path, any, error) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	err := json.Unmarshal(data, reflect.New(typ).Interface())
	if err == nil || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil, nil
	}
	if reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return leaf(data, path, err)
	}
	switch typ.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) != nil {
			return leaf(data, path, err)
		}
		if p, v, e := undecodableField(fields, typ, path); p != nil {
			return p, v, e
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return leaf(data, path, err)
		}
		for i, item := range items {
			if p, v, e := undecodable(item, typ.Elem(), orRoot(path).Index(i)); p != nil {
				return p, v, e
			}
		}
	case reflect.Map:
		var items map[string]json.RawMessage
		if typ.Key().Kind() != reflect.String || json.Unmarshal(data, &items) != nil {
			return leaf(data, path, err)
		}
		for _, k := range slices.Sorted(maps.Keys(items)) {
			if p, v, e := undecodable(items[k], typ.Elem(), orRoot(path).Key(k)); p != nil {
				return p, v, e
			}
		}
	}
	return leaf(data, path, err)
}

// undecodableField looks for the field of a struct of type typ, given as
// fields by JSON name, that does not decode. Embedded structs without a
// JSON name ("inline") share the struct's fields and path.
func undecodableField(fields map[string]json.RawMessage, typ reflect.Type, path *field.Path) (*field.Path, any, error) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			if p, v, e := undecodableField(fields, ft, path); p != nil {
				return p, v, e
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		data, ok := fields[name]
		if !ok {
			continue
		}
		if p, v, e := undecodable(data, f.Type, child(path, name)); p != nil {
			return p, v, e
		}
	}
	return nil, nil, nil
}

// child is path's child name; a root path name when path is nil.
func child(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

// orRoot is path, or an unnamed root when it is nil (an object is a
// struct: its items have a field's path).
func orRoot(path *field.Path) *field.Path {
	if path == nil {
		return field.NewPath("")
	}
	return path
}

// leaf returns path as the field to blame, with data as its value (a
// string as itself).
func leaf(data []byte, path *field.Path, err error) (*field.Path, any, error) {
	if path == nil {
		return nil, nil, nil
	}
	var value any = string(data)
	var s string
	if json.Unmarshal(data, &s) == nil {
		value = s
	}
	return path, value, err
}
