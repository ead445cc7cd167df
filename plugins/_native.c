/*
 * The built-in plugins' C fast paths (optional: without a compiler the Python ones run).
 *
 * 1. numpy's warm-path keys read from the ndarray's own struct: the dtype object and the
 *    C/F-contiguous and writeable bits (plus 64-byte alignment for aligned_key), the tuples
 *    the Python keys in frameworks/numpy.py build, at a fraction of the cost. An array that
 *    is neither C- nor F-contiguous (its key names its layout) goes to the Python key.
 * 2. DLPack 1.3's C exchange API (``type(x).__dlpack_c_exchange_api__``, a capsule holding
 *    a table of C functions; torch 2.10+ exposes it): ``to_numpy(x)`` exports ``x`` to a
 *    DLManagedTensorVersioned through the producer's table and wraps it in an ndarray whose
 *    base owns it; ``Importer(T)(a)`` hands an ndarray to the producer of type T through its
 *    table. No ``__dlpack__`` call, no capsule or keyword argument in Python.
 *
 * 3. Two generic pieces for other frameworks' warm paths: ``AttrKey`` (a key of an object's
 *    attributes and methods, read in C: TensorFlow's) and ``Chain`` (a two-step runner,
 *    g(f(x)), without a Python frame between: np.asarray then torch.from_numpy).
 *
 * Built without numpy's headers, as _aligned_alloc.c is (one wheel for numpy 1.x and 2.x):
 * the ndarray and dtype structs are declared here with numpy's public layout (the fields
 * numpy documents as stable since 1.7: data, nd, dimensions, strides, base, descr, flags;
 * a dtype's kind, byteorder and type_num), and numpy's C-API table is read from the capsule
 * numpy._core._multiarray_umath._ARRAY_API, slots 2, 45, 94 and 282 (PyArray_Type,
 * PyArray_DescrFromType, PyArray_NewFromDescr, PyArray_SetBaseObject; numpy_api.py). The
 * table is loaded on first use, when numpy is already imported: importing this module
 * imports nothing.
 *
 * The DLPack structs below are the ABI of DLPack 1.x (dlpack.h: DLDevice, DLDataType,
 * DLTensor, DLManagedTensorVersioned, DLPackExchangeAPI), declared from the specification.
 * A table whose major version is not 1 is walked back (header.prev_api) to one that is, or
 * refused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- numpy's public layout ------------------------------------------------------------ */

typedef Py_ssize_t npy_intp;

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind;
    char type;
    char byteorder;
    char former_flags;
    int type_num;
} DescrHead;

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    npy_intp *dimensions;
    npy_intp *strides;
    PyObject *base;
    DescrHead *descr;
    int flags;
} ArrayHead;

#define NPY_C_CONTIGUOUS 0x0001
#define NPY_F_CONTIGUOUS 0x0002
#define NPY_WRITEABLE 0x0400
#define NPY_MAXDIMS_SAFE 64
#define ALIGNMENT 64

enum {
    NPY_BOOL = 0, NPY_BYTE, NPY_UBYTE, NPY_SHORT, NPY_USHORT, NPY_INT, NPY_UINT, NPY_LONG,
    NPY_ULONG, NPY_LONGLONG, NPY_ULONGLONG, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT,
    NPY_CDOUBLE, NPY_HALF = 23
};

typedef PyObject *(*descr_from_type_fn)(int);
typedef PyObject *(*new_from_descr_fn)(PyTypeObject *, PyObject *, int, const npy_intp *,
                                       const npy_intp *, void *, int, PyObject *);
typedef int (*set_base_fn)(PyObject *, PyObject *);

static PyTypeObject *ndarray_type = NULL;
static descr_from_type_fn descr_from_type = NULL;
static new_from_descr_fn new_from_descr = NULL;
static set_base_fn set_base_object = NULL;

/* Load numpy's table once; 0 on success, -1 with an exception. */
static int
load_numpy(void)
{
    if (ndarray_type != NULL) {
        return 0;
    }
    PyObject *mod = PyImport_ImportModule("numpy._core._multiarray_umath");
    if (mod == NULL && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
        PyErr_Clear();
        mod = PyImport_ImportModule("numpy.core._multiarray_umath"); /* numpy 1.x */
    }
    if (mod == NULL) {
        return -1;
    }
    PyObject *capsule = PyObject_GetAttrString(mod, "_ARRAY_API");
    Py_DECREF(mod);
    if (capsule == NULL) {
        return -1;
    }
    void **table = PyCapsule_CheckExact(capsule) ? PyCapsule_GetPointer(capsule, NULL) : NULL;
    Py_DECREF(capsule); /* numpy's module holds the capsule for the life of the process */
    if (table == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "numpy's _ARRAY_API is not a capsule");
        }
        return -1;
    }
    descr_from_type = (descr_from_type_fn)table[45];
    new_from_descr = (new_from_descr_fn)table[94];
    set_base_object = (set_base_fn)table[282];
    ndarray_type = (PyTypeObject *)table[2];
    return 0;
}

/* ---- 1. numpy's keys ------------------------------------------------------------------ */

static PyObject *python_key = NULL;         /* frameworks/numpy.py's key() */
static PyObject *python_aligned_key = NULL; /* and aligned_key() */

static PyObject *
set_numpy_keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "set_numpy_keys(key, aligned_key): two callables");
        return NULL;
    }
    Py_XSETREF(python_key, Py_NewRef(args[0]));
    Py_XSETREF(python_aligned_key, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* The fast read applies to an ndarray (or subclass) that is C- or F-contiguous; anything
 * else is the Python key's. */
static ArrayHead *
keyable(PyObject *x)
{
    if (ndarray_type == NULL && load_numpy() < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyObject_TypeCheck(x, ndarray_type)) {
        return NULL;
    }
    ArrayHead *a = (ArrayHead *)x;
    return (a->flags & (NPY_C_CONTIGUOUS | NPY_F_CONTIGUOUS)) ? a : NULL;
}

/* The Python key the C read leaves ``x`` to (set by set_numpy_keys / set_torch_keys). */
static PyObject *
fallback(PyObject *key, PyObject *x)
{
    if (key == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the Python keys were not set (set_*_keys)");
        return NULL;
    }
    return PyObject_CallOneArg(key, x);
}

static PyObject *
numpy_key(PyObject *module, PyObject *x)
{
    ArrayHead *a = keyable(x);
    if (a == NULL) {
        return fallback(python_key, x);
    }
    PyObject *bits = PyLong_FromLong(a->flags & (NPY_C_CONTIGUOUS | NPY_F_CONTIGUOUS | NPY_WRITEABLE));
    if (bits == NULL) {
        return NULL;
    }
    PyObject *key = PyTuple_New(2);
    if (key == NULL) {
        Py_DECREF(bits);
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)a->descr));
    PyTuple_SET_ITEM(key, 1, bits);
    return key;
}

static PyObject *
numpy_aligned_key(PyObject *module, PyObject *x)
{
    ArrayHead *a = keyable(x);
    if (a == NULL) {
        return fallback(python_aligned_key, x);
    }
    PyObject *bits = PyLong_FromLong(a->flags & (NPY_C_CONTIGUOUS | NPY_F_CONTIGUOUS | NPY_WRITEABLE));
    if (bits == NULL) {
        return NULL;
    }
    PyObject *key = PyTuple_New(3);
    if (key == NULL) {
        Py_DECREF(bits);
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)a->descr));
    PyTuple_SET_ITEM(key, 1, bits);
    PyTuple_SET_ITEM(key, 2, PyBool_FromLong(((uintptr_t)a->data % ALIGNMENT) == 0));
    return key;
}

/* ---- 2. DLPack's C exchange API ---------------------------------------------------- */

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct {
    int32_t device_type; /* DLDeviceType: kDLCPU = 1 */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code; /* kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6 */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; not NULL when ndim > 0 since DLPack 1.2 */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DL_CPU 1
#define DL_FLAG_READ_ONLY ((uint64_t)1)
#define DL_INT 0
#define DL_UINT 1
#define DL_FLOAT 2
#define DL_COMPLEX 5
#define DL_BOOL 6

typedef struct ExchangeHeader {
    DLPackVersion version;
    struct ExchangeHeader *prev_api;
} ExchangeHeader;

typedef struct {
    ExchangeHeader header;
    void *managed_tensor_allocator;
    int (*managed_tensor_from_py_object_no_sync)(void *py_object, DLManagedTensorVersioned **out);
    int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned *tensor, void **out);
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out);
    void *current_work_stream;
} ExchangeAPI;

#define EXCHANGE_ATTR "__dlpack_c_exchange_api__"
#define EXCHANGE_CAPSULE "dlpack_exchange_api"

static PyObject *str_exchange_attr = NULL;

/* The version-1 table ``type`` exposes; NULL with an exception when it has none. */
static const ExchangeAPI *
lookup_exchange_api(PyTypeObject *type)
{
    PyObject *capsule = PyObject_GetAttr((PyObject *)type, str_exchange_attr);
    if (capsule == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%.200s has no %s", type->tp_name, EXCHANGE_ATTR);
        }
        return NULL;
    }
    ExchangeHeader *h = NULL;
    if (PyCapsule_IsValid(capsule, EXCHANGE_CAPSULE)) {
        h = PyCapsule_GetPointer(capsule, EXCHANGE_CAPSULE);
    }
    Py_DECREF(capsule); /* the table is static in its library (DLPack requires it) */
    if (h == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%.200s's %s is not a capsule named \"%s\"",
                     type->tp_name, EXCHANGE_ATTR, EXCHANGE_CAPSULE);
        return NULL;
    }
    while (h != NULL && h->version.major > 1) {
        h = h->prev_api;
    }
    if (h == NULL || h->version.major != 1) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%.200s's %s has no DLPack 1.x table", type->tp_name,
                         EXCHANGE_ATTR);
        }
        return NULL;
    }
    return (const ExchangeAPI *)h;
}

/* The last type asked for and its table (DLPack lets consumers cache it per type); the type
 * is held, so its address cannot be reused by another type while it is cached. */
static PyTypeObject *cached_type = NULL;
static const ExchangeAPI *cached_api = NULL;

static const ExchangeAPI *
exchange_api(PyTypeObject *type)
{
    if (type == cached_type) {
        return cached_api;
    }
    const ExchangeAPI *api = lookup_exchange_api(type);
    if (api != NULL) {
        Py_XSETREF(cached_type, (PyTypeObject *)Py_NewRef((PyObject *)type));
        cached_api = api;
    }
    return api;
}

/* ---- torch's keys, read through its exchange table --------------------------------- */

static PyObject *python_torch_key = NULL, *python_torch_aligned_key = NULL;
static PyObject *str_requires_grad, *str_base, *str_is_conj, *str_is_neg;

static PyObject *
set_torch_keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "set_torch_keys(key, aligned_key): two callables");
        return NULL;
    }
    Py_XSETREF(python_torch_key, Py_NewRef(args[0]));
    Py_XSETREF(python_torch_aligned_key, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* Fill d from the tensor through its type's dltensor_from_py_object_no_sync (a non-owning
 * view of its metadata, no Python object made); 0 when it cannot (then the Python key). */
static int
read_tensor(PyObject *t, DLTensor *d)
{
    const ExchangeAPI *api = exchange_api(Py_TYPE(t));
    if (api == NULL || api->dltensor_from_py_object_no_sync == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (api->dltensor_from_py_object_no_sync(t, d) != 0) { /* sparse, nested, meta: Python's */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* Whether the strides are C-contiguous (size-1 dims and empty tensors as torch counts them). */
static int
c_contiguous(const DLTensor *d)
{
    int64_t expected = 1;
    for (int i = d->ndim - 1; i >= 0; i--) {
        int64_t n = d->shape[i];
        if (n == 0) {
            return 1;
        }
        if (n != 1 && d->strides[i] != expected) {
            return 0;
        }
        expected *= n;
    }
    return 1;
}

static int
method_true(PyObject *t, PyObject *name)
{
    PyObject *r = PyObject_VectorcallMethod(name, &t, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (r == NULL) {
        return -1;
    }
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

/* getattr(t, name) where name is a C getset of t's type: its getter called directly, as
 * getattr would call it (a data descriptor, which no instance attribute can shadow), without
 * the lookup around it; any other attribute through getattr. */
static PyObject *
get_attribute(PyObject *t, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(Py_TYPE(t), name); /* borrowed; never raises */
    if (descr != NULL && Py_IS_TYPE(descr, &PyGetSetDescr_Type)) {
        PyGetSetDef *gs = ((PyGetSetDescrObject *)descr)->d_getset;
        if (gs->get != NULL && PyObject_TypeCheck(t, PyDescr_TYPE(descr))) {
            return gs->get(t, gs->closure);
        }
    }
    return PyObject_GetAttr(t, name);
}

/* (dtype and device as one int, requires_grad, is_view[, aligned][, is_conj, is_neg]) for a
 * C-contiguous strided tensor; anything else is the Python key's (whose tuples start with a
 * torch.dtype, so the two never collide). */
static PyObject *
torch_key_impl(PyObject *t, int aligned, PyObject *python)
{
    DLTensor d;
    if (!read_tensor(t, &d) || d.ndim < 0 || (d.ndim > 0 && (d.shape == NULL || d.strides == NULL)) ||
        !c_contiguous(&d)) {
        return fallback(python, t);
    }
    unsigned long long packed = ((unsigned long long)(uint32_t)d.device.device_type << 48) |
                                ((unsigned long long)(uint16_t)d.device.device_id << 32) |
                                ((unsigned long long)d.dtype.code << 24) |
                                ((unsigned long long)d.dtype.bits << 16) | d.dtype.lanes;
    PyObject *grad = get_attribute(t, str_requires_grad);
    if (grad == NULL) {
        return NULL;
    }
    PyObject *base = get_attribute(t, str_base);
    int view = base == NULL ? -1 : base != Py_None;
    Py_XDECREF(base);
    int conj = 0, neg = 0;
    if (view > 0) {
        conj = method_true(t, str_is_conj);
        neg = conj < 0 ? -1 : method_true(t, str_is_neg);
    }
    if (view < 0 || conj < 0 || neg < 0) {
        Py_DECREF(grad);
        return NULL;
    }
    Py_ssize_t n = 3 + (aligned ? 1 : 0) + (view ? 2 : 0), i = 0;
    PyObject *key = PyTuple_New(n);
    /* one dtype and device keyed after another: the int of the last one is kept */
    static unsigned long long last_packed = 0;
    static PyObject *last_first = NULL;
    if (last_first == NULL || packed != last_packed) {
        PyObject *made = PyLong_FromUnsignedLongLong(packed);
        if (made != NULL) {
            Py_XSETREF(last_first, made);
            last_packed = packed;
        }
    }
    PyObject *first = last_first != NULL && packed == last_packed ? Py_NewRef(last_first) : NULL;
    if (key == NULL || first == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(first);
        Py_DECREF(grad);
        return NULL;
    }
    PyTuple_SET_ITEM(key, i++, first);
    PyTuple_SET_ITEM(key, i++, grad);
    PyTuple_SET_ITEM(key, i++, PyBool_FromLong(view));
    if (aligned) {
        uintptr_t address = (uintptr_t)d.data + (uintptr_t)d.byte_offset;
        PyTuple_SET_ITEM(key, i++, PyBool_FromLong(address % ALIGNMENT == 0));
    }
    if (view) {
        PyTuple_SET_ITEM(key, i++, PyBool_FromLong(conj));
        PyTuple_SET_ITEM(key, i++, PyBool_FromLong(neg));
    }
    return key;
}

static PyObject *
torch_key(PyObject *module, PyObject *t)
{
    return torch_key_impl(t, 0, python_torch_key);
}

static PyObject *
torch_aligned_key(PyObject *module, PyObject *t)
{
    return torch_key_impl(t, 1, python_torch_aligned_key);
}

static PyObject *
has_exchange_api(PyObject *module, PyObject *type)
{
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "has_exchange_api(type)");
        return NULL;
    }
    if (exchange_api((PyTypeObject *)type) == NULL) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* numpy's type number for a DLPack dtype, or -1 (set an exception) when numpy has none
 * this module builds (bfloat16 and float8 go through ml_dtypes, in Python). */
static int
numpy_type_num(DLDataType t)
{
    if (t.lanes == 1) {
        switch (t.code) {
        case DL_BOOL:
            if (t.bits == 8) return NPY_BOOL;
            break;
        case DL_INT:
            switch (t.bits) {
            case 8: return NPY_BYTE;
            case 16: return NPY_SHORT;
            case 32: return NPY_INT;
            case 64: return sizeof(long) == 8 ? NPY_LONG : NPY_LONGLONG;
            }
            break;
        case DL_UINT:
            switch (t.bits) {
            case 8: return NPY_UBYTE;
            case 16: return NPY_USHORT;
            case 32: return NPY_UINT;
            case 64: return sizeof(long) == 8 ? NPY_ULONG : NPY_ULONGLONG;
            }
            break;
        case DL_FLOAT:
            switch (t.bits) {
            case 16: return NPY_HALF;
            case 32: return NPY_FLOAT;
            case 64: return NPY_DOUBLE;
            }
            break;
        case DL_COMPLEX:
            switch (t.bits) {
            case 64: return NPY_CFLOAT;
            case 128: return NPY_CDOUBLE;
            }
            break;
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "DLPack dtype (code %d, %d bits, %d lanes) has no numpy type this path builds",
                 t.code, t.bits, t.lanes);
    return -1;
}

/* The DLPack dtype of numpy's type number (native byte order), or code 255 when none. */
static DLDataType
dlpack_dtype(int type_num)
{
    DLDataType t = {255, 0, 1};
    switch (type_num) {
    case NPY_BOOL: t.code = DL_BOOL; t.bits = 8; break;
    case NPY_BYTE: t.code = DL_INT; t.bits = 8; break;
    case NPY_UBYTE: t.code = DL_UINT; t.bits = 8; break;
    case NPY_SHORT: t.code = DL_INT; t.bits = 16; break;
    case NPY_USHORT: t.code = DL_UINT; t.bits = 16; break;
    case NPY_INT: t.code = DL_INT; t.bits = 8 * sizeof(int); break;
    case NPY_UINT: t.code = DL_UINT; t.bits = 8 * sizeof(int); break;
    case NPY_LONG: t.code = DL_INT; t.bits = 8 * sizeof(long); break;
    case NPY_ULONG: t.code = DL_UINT; t.bits = 8 * sizeof(long); break;
    case NPY_LONGLONG: t.code = DL_INT; t.bits = 64; break;
    case NPY_ULONGLONG: t.code = DL_UINT; t.bits = 64; break;
    case NPY_HALF: t.code = DL_FLOAT; t.bits = 16; break;
    case NPY_FLOAT: t.code = DL_FLOAT; t.bits = 32; break;
    case NPY_DOUBLE: t.code = DL_FLOAT; t.bits = 64; break;
    case NPY_CFLOAT: t.code = DL_COMPLEX; t.bits = 64; break;
    case NPY_CDOUBLE: t.code = DL_COMPLEX; t.bits = 128; break;
    }
    return t;
}

#define USED_CAPSULE "interop_core.dltensor_versioned"

/* The ndarray's base: calls the producer's deleter when numpy lets go of the memory. */
static void
release_managed(PyObject *capsule)
{
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, USED_CAPSULE);
    if (m != NULL && m->deleter != NULL) {
        m->deleter(m);
    }
}

static PyObject *
fail_managed(DLManagedTensorVersioned *m, PyObject *exc, const char *message)
{
    if (message != NULL) {
        PyErr_SetString(exc, message);
    }
    if (m->deleter != NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb); /* a deleter may call into Python */
        m->deleter(m);
        PyErr_Restore(type, value, tb);
    }
    return NULL;
}

/* to_numpy(x): x's producer exports it through its table; the ndarray views its memory and
 * owns the export (the producer's deleter runs when the ndarray and its views are gone). */
static PyObject *
to_numpy(PyObject *module, PyObject *x)
{
    const ExchangeAPI *api = exchange_api(Py_TYPE(x));
    if (api == NULL || (ndarray_type == NULL && load_numpy() < 0)) {
        return NULL;
    }
    DLManagedTensorVersioned *m = NULL;
    if (api->managed_tensor_from_py_object_no_sync(x, &m) != 0 || m == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_BufferError, "the producer's C exchange export failed");
        }
        return NULL;
    }
    const DLTensor *t = &m->dl_tensor;
    if (m->version.major != 1) {
        return fail_managed(m, PyExc_BufferError, "the export is not a DLPack 1.x tensor");
    }
    if (t->device.device_type != DL_CPU) {
        return fail_managed(m, PyExc_BufferError, "the tensor is not in CPU memory");
    }
    if (t->ndim < 0 || t->ndim > NPY_MAXDIMS_SAFE || (t->ndim > 0 && (t->shape == NULL || t->strides == NULL))) {
        return fail_managed(m, PyExc_BufferError, "the export's ndim, shape or strides are invalid");
    }
    int type_num = numpy_type_num(t->dtype);
    if (type_num < 0) {
        return fail_managed(m, PyExc_TypeError, NULL);
    }
    npy_intp itemsize = t->dtype.bits / 8;
    npy_intp dims[NPY_MAXDIMS_SAFE], strides[NPY_MAXDIMS_SAFE];
    int empty = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) {
            return fail_managed(m, PyExc_BufferError, "the export has a negative dimension");
        }
        empty |= t->shape[i] == 0;
        dims[i] = (npy_intp)t->shape[i];
        strides[i] = (npy_intp)t->strides[i] * itemsize;
    }
    char *data = (char *)t->data + t->byte_offset;
    if (data == NULL && !empty) {
        return fail_managed(m, PyExc_BufferError, "the export has no data pointer");
    }
    PyObject *descr = descr_from_type(type_num);
    if (descr == NULL) {
        return fail_managed(m, PyExc_TypeError, NULL);
    }
    int flags = (m->flags & DL_FLAG_READ_ONLY) ? 0 : NPY_WRITEABLE;
    /* numpy allocates when data is NULL: an empty export views a static byte instead */
    static char no_data[1];
    PyObject *array = new_from_descr(ndarray_type, descr, t->ndim, dims, strides,
                                     data == NULL ? no_data : data, flags, NULL);
    if (array == NULL) {
        return fail_managed(m, PyExc_TypeError, NULL);
    }
    PyObject *owner = PyCapsule_New(m, USED_CAPSULE, release_managed);
    if (owner == NULL) {
        Py_DECREF(array);
        return fail_managed(m, PyExc_MemoryError, NULL);
    }
    if (set_base_object(array, owner) < 0) { /* steals owner even when it fails */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* An ndarray lent to a producer: the managed tensor and its shape/strides in one block,
 * the ndarray kept alive until the producer calls the deleter (from any thread). */
typedef struct {
    DLManagedTensorVersioned managed;
    int64_t sizes[];
} Lent;

static void
return_lent(DLManagedTensorVersioned *m)
{
    if (!Py_IsInitialized()) { /* the interpreter is gone (and the ndarray with it) */
        return;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *)m->manager_ctx);
    PyGILState_Release(gil);
    PyMem_RawFree(m);
}

static DLManagedTensorVersioned *
lend_ndarray(PyObject *x)
{
    if (ndarray_type == NULL && load_numpy() < 0) {
        return NULL;
    }
    if (!PyObject_TypeCheck(x, ndarray_type)) {
        PyErr_Format(PyExc_TypeError, "expected a numpy.ndarray, got %.200s", Py_TYPE(x)->tp_name);
        return NULL;
    }
    ArrayHead *a = (ArrayHead *)x;
    DescrHead *d = a->descr;
    DLDataType dtype = dlpack_dtype(d->type_num);
    if (dtype.code == 255 || d->byteorder == '>') {
        PyErr_SetString(PyExc_TypeError, "the array's dtype has no DLPack equivalent here");
        return NULL;
    }
    if (!(a->flags & NPY_WRITEABLE)) {
        PyErr_SetString(PyExc_BufferError, "the array is read-only");
        return NULL;
    }
    int nd = a->nd;
    if (nd < 0 || nd > NPY_MAXDIMS_SAFE) {
        PyErr_SetString(PyExc_BufferError, "the array's ndim is out of range");
        return NULL;
    }
    npy_intp itemsize = dtype.bits / 8;
    int empty = 0;
    for (int i = 0; i < nd; i++) {
        empty |= a->dimensions[i] == 0;
    }
    Lent *lent = PyMem_RawMalloc(sizeof(Lent) + 2 * (size_t)nd * sizeof(int64_t));
    if (lent == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    int64_t *shape = lent->sizes, *strides = lent->sizes + nd;
    int64_t contiguous = 1;
    for (int i = nd - 1; i >= 0; i--) {
        npy_intp n = a->dimensions[i], s = a->strides[i];
        shape[i] = n;
        if (s >= 0 && s % itemsize == 0) {
            strides[i] = s / itemsize; /* kept as numpy has it, as torch.from_numpy keeps it */
        }
        else if (empty || n == 1) {
            strides[i] = contiguous; /* addresses nothing: any value, torch wants >= 0 */
        }
        else {
            PyMem_RawFree(lent);
            PyErr_SetString(PyExc_BufferError,
                            "the array has negative or non-element strides, which DLPack "
                            "importers refuse (torch aborts on negative ones)");
            return NULL;
        }
        contiguous *= n > 0 ? n : 1;
    }
    DLManagedTensorVersioned *m = &lent->managed;
    m->version.major = 1;
    m->version.minor = 0;
    m->manager_ctx = Py_NewRef(x);
    m->deleter = return_lent;
    m->flags = 0;
    m->dl_tensor.data = a->data;
    m->dl_tensor.device.device_type = DL_CPU;
    m->dl_tensor.device.device_id = 0;
    m->dl_tensor.ndim = nd;
    m->dl_tensor.dtype = dtype;
    m->dl_tensor.shape = nd ? shape : NULL;
    m->dl_tensor.strides = nd ? strides : NULL;
    m->dl_tensor.byte_offset = 0;
    return m;
}

/* Importer(T): a callable handing ndarrays to T's producer through T's exchange table. */
typedef struct {
    PyObject_HEAD
    const ExchangeAPI *api;
    PyObject *type;
    vectorcallfunc vectorcall;
} Importer;

static PyObject *
importer_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "an Importer takes one ndarray");
        return NULL;
    }
    DLManagedTensorVersioned *m = lend_ndarray(args[0]);
    if (m == NULL) {
        return NULL;
    }
    void *out = NULL;
    if (((Importer *)self)->api->managed_tensor_to_py_object_no_sync(m, &out) != 0 || out == NULL) {
        /* The producer took the tensor (DLPack: ownership is stolen) and reports why it
         * failed; calling the deleter here could free it twice. */
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_BufferError, "the producer's C exchange import failed");
        }
        return NULL;
    }
    return (PyObject *)out;
}

static PyObject *
importer_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    PyObject *type;
    if (!PyArg_ParseTuple(args, "O!:Importer", &PyType_Type, &type)) {
        return NULL;
    }
    const ExchangeAPI *api = exchange_api((PyTypeObject *)type);
    if (api == NULL) {
        return NULL;
    }
    Importer *self = (Importer *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    self->api = api;
    self->type = Py_NewRef(type);
    self->vectorcall = importer_vectorcall;
    return (PyObject *)self;
}

static void
importer_dealloc(Importer *self)
{
    Py_XDECREF(self->type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
importer_repr(Importer *self)
{
    return PyUnicode_FromFormat("<Importer into %.200s through its C exchange API>",
                                ((PyTypeObject *)self->type)->tp_name);
}

static PyTypeObject ImporterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "interop_plugins._native.Importer",
    .tp_doc = "Importer(T)(ndarray): the ndarray as a T, through T's DLPack C exchange table.",
    .tp_basicsize = sizeof(Importer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Importer, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = importer_new,
    .tp_dealloc = (destructor)importer_dealloc,
    .tp_repr = (reprfunc)importer_repr,
};

/* ---- keys of attributes, and runners of two steps ----------------------------------- */

/* AttrKey(names, calls, fallback): key(x) = (x.n0[()], x.n1[()], ...), each attribute called
 * when its entry of ``calls`` is true, read as getattr reads it; anything that raises sends x
 * to fallback(x) (the Python key, which gives the same tuples and handles the rest). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *names;    /* tuple of interned str */
    PyObject *calls;    /* tuple of bool */
    PyObject *fallback;
} AttrKey;

static PyObject *
attr_key_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    AttrKey *self = (AttrKey *)op;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a key takes one object");
        return NULL;
    }
    PyObject *x = args[0];
    Py_ssize_t n = PyTuple_GET_SIZE(self->names);
    PyObject *key = PyTuple_New(n);
    if (key == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = get_attribute(x, PyTuple_GET_ITEM(self->names, i));
        if (value != NULL && PyTuple_GET_ITEM(self->calls, i) == Py_True) {
            Py_SETREF(value, PyObject_CallNoArgs(value));
        }
        if (value == NULL) {
            Py_DECREF(key);
            if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                return NULL;
            }
            PyErr_Clear();
            return PyObject_CallOneArg(self->fallback, x);
        }
        PyTuple_SET_ITEM(key, i, value);
    }
    return key;
}

static PyObject *
attr_key_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    PyObject *names, *calls, *fallback;
    if (!PyArg_ParseTuple(args, "O!O!O:AttrKey", &PyTuple_Type, &names, &PyTuple_Type, &calls,
                          &fallback)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n == 0 || PyTuple_GET_SIZE(calls) != n || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError,
                        "AttrKey(names, calls, fallback): names and calls of one length, a callable");
        return NULL;
    }
    PyObject *interned = PyTuple_New(n), *flags = PyTuple_New(n);
    if (interned == NULL || flags == NULL) {
        Py_XDECREF(interned);
        Py_XDECREF(flags);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        int call = PyObject_IsTrue(PyTuple_GET_ITEM(calls, i));
        if (!PyUnicode_Check(name) || call < 0) {
            Py_DECREF(interned);
            Py_DECREF(flags);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "AttrKey: names must be str");
            }
            return NULL;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        PyTuple_SET_ITEM(interned, i, name);
        PyTuple_SET_ITEM(flags, i, PyBool_FromLong(call));
    }
    AttrKey *self = (AttrKey *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        Py_DECREF(interned);
        Py_DECREF(flags);
        return NULL;
    }
    self->vectorcall = attr_key_vectorcall;
    self->names = interned;
    self->calls = flags;
    self->fallback = Py_NewRef(fallback);
    return (PyObject *)self;
}

static int
attr_key_traverse(AttrKey *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    return 0;
}

static int
attr_key_clear(AttrKey *self)
{
    Py_CLEAR(self->names);
    Py_CLEAR(self->calls);
    Py_CLEAR(self->fallback);
    return 0;
}

static void
attr_key_dealloc(AttrKey *self)
{
    PyObject_GC_UnTrack(self);
    attr_key_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject AttrKeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "interop_plugins._native.AttrKey",
    .tp_doc = "AttrKey(names, calls, fallback): a key of an object's attributes, read in C.",
    .tp_basicsize = sizeof(AttrKey),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AttrKey, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = attr_key_new,
    .tp_traverse = (traverseproc)attr_key_traverse,
    .tp_clear = (inquiry)attr_key_clear,
    .tp_dealloc = (destructor)attr_key_dealloc,
};

/* Chain(f, g): chain(x) = g(f(x)), without a Python frame between them. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *first;
    PyObject *then;
} Chain;

static PyObject *
chain_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Chain *self = (Chain *)op;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Chain takes one object");
        return NULL;
    }
    PyObject *middle = PyObject_CallOneArg(self->first, args[0]);
    if (middle == NULL) {
        return NULL;
    }
    PyObject *out = PyObject_CallOneArg(self->then, middle);
    Py_DECREF(middle);
    return out;
}

static PyObject *
chain_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    PyObject *first, *then;
    if (!PyArg_ParseTuple(args, "OO:Chain", &first, &then)) {
        return NULL;
    }
    if (!PyCallable_Check(first) || !PyCallable_Check(then)) {
        PyErr_SetString(PyExc_TypeError, "Chain(f, g): two callables");
        return NULL;
    }
    Chain *self = (Chain *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = chain_vectorcall;
    self->first = Py_NewRef(first);
    self->then = Py_NewRef(then);
    return (PyObject *)self;
}

static int
chain_traverse(Chain *self, visitproc visit, void *arg)
{
    Py_VISIT(self->first);
    Py_VISIT(self->then);
    return 0;
}

static int
chain_clear(Chain *self)
{
    Py_CLEAR(self->first);
    Py_CLEAR(self->then);
    return 0;
}

static void
chain_dealloc(Chain *self)
{
    PyObject_GC_UnTrack(self);
    chain_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
chain_repr(Chain *self)
{
    return PyUnicode_FromFormat("<Chain %R then %R>", self->first, self->then);
}

static PyTypeObject ChainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "interop_plugins._native.Chain",
    .tp_doc = "Chain(f, g)(x) = g(f(x)): a runner of two steps without a Python frame.",
    .tp_basicsize = sizeof(Chain),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Chain, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = chain_new,
    .tp_traverse = (traverseproc)chain_traverse,
    .tp_clear = (inquiry)chain_clear,
    .tp_dealloc = (destructor)chain_dealloc,
    .tp_repr = (reprfunc)chain_repr,
};

/* ---- the module --------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"set_numpy_keys", (PyCFunction)(void (*)(void))set_numpy_keys, METH_FASTCALL,
     "set_numpy_keys(key, aligned_key): the Python keys for arrays the fast read leaves."},
    {"numpy_key", numpy_key, METH_O, "frameworks.numpy.key(), read from the ndarray struct."},
    {"numpy_aligned_key", numpy_aligned_key, METH_O,
     "frameworks.numpy.aligned_key(), read from the ndarray struct."},
    {"set_torch_keys", (PyCFunction)(void (*)(void))set_torch_keys, METH_FASTCALL,
     "set_torch_keys(key, aligned_key): the Python keys for tensors the C read leaves."},
    {"torch_key", torch_key, METH_O, "A warm-path key of a strided torch tensor, read in C."},
    {"torch_aligned_key", torch_aligned_key, METH_O, "torch_key() plus 64-byte alignment."},
    {"has_exchange_api", has_exchange_api, METH_O,
     "Whether a type exposes a DLPack 1.x C exchange table."},
    {"to_numpy", to_numpy, METH_O,
     "to_numpy(x): an ndarray viewing x, exported through type(x)'s C exchange table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "The built-in plugins' optional C fast paths.", -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    str_exchange_attr = PyUnicode_InternFromString(EXCHANGE_ATTR);
    str_requires_grad = PyUnicode_InternFromString("requires_grad");
    str_base = PyUnicode_InternFromString("_base");
    str_is_conj = PyUnicode_InternFromString("is_conj");
    str_is_neg = PyUnicode_InternFromString("is_neg");
    if (!str_exchange_attr || !str_requires_grad || !str_base || !str_is_conj || !str_is_neg) {
        return NULL;
    }
    if (PyType_Ready(&ImporterType) < 0 || PyType_Ready(&AttrKeyType) < 0 ||
        PyType_Ready(&ChainType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Importer", (PyObject *)&ImporterType) < 0 ||
        PyModule_AddObjectRef(m, "AttrKey", (PyObject *)&AttrKeyType) < 0 ||
        PyModule_AddObjectRef(m, "Chain", (PyObject *)&ChainType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
