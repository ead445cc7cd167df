/*
 * A NEP 49 data-memory handler for numpy that returns 64-byte aligned memory.
 *
 * JAX and TensorFlow import a host buffer without copying only when it starts on a 64-byte
 * boundary; numpy's default allocator (libc malloc) mostly gives addresses 16 past one.
 * Installed with enable() / set_handler(), numpy allocates array data here: libc malloc or
 * calloc of size + 64 bytes, the pointer handed out is the first 64-byte boundary strictly
 * after the block's start, and the byte just before it holds that offset (1..64), so free
 * and realloc find the block again.
 *
 * Built without numpy's headers (the wheel then works with numpy 1.22+ and 2.x alike): the
 * two NEP 49 structs are declared here with numpy's layout, and numpy's C-API table is read
 * from the capsule numpy._core._multiarray_umath._ARRAY_API (numpy.core... on numpy 1.x),
 * slots 304 / 305 (PyDataMem_SetHandler / PyDataMem_GetHandler, numpy_api.py, since 1.22).
 * The table is trusted only after numpy's C feature version says it has those slots and
 * GetHandler returned a capsule named "mem_handler" holding a version 1 handler.
 *
 * numpy keeps the current handler in a ContextVar and stores the handler with each array
 * that owns its data, so an array allocated here is freed here whatever is current then.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#define ALIGNMENT 64
/* numpy's alloc.c advises huge pages for allocations of 4 MiB and more. */
#define HUGEPAGE_MIN ((size_t)1 << 22)
/* numpy's C feature version that added slots 304 / 305 (NPY_1_22_API_VERSION). */
#define FEATURE_1_22 0x0000000fu
#define SLOT_FEATURE_VERSION 211
#define SLOT_SET_HANDLER 304
#define SLOT_GET_HANDLER 305
#define CAPSULE_NAME "mem_handler"

/* numpy/ndarraytypes.h, version 1 of both structs (NEP 49). */
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} DataMemAllocator;

typedef struct {
    char name[127];
    uint8_t version;
    DataMemAllocator allocator;
} DataMemHandler;

/* numpy's layout: the allocator starts at byte 128 (its comment: keeps the struct aligned). */
_Static_assert(offsetof(DataMemHandler, allocator) == 128, "NEP 49 handler layout");

/* Whether to madvise(MADV_HUGEPAGE) large blocks; the Python side copies numpy's setting
 * (np._core.multiarray._get_madvise_hugepage()) in when it installs the handler. */
static int advise_hugepages = 1;
static size_t page_size = 4096;

static void
advise(char *base, size_t total, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGEPAGE_MIN && advise_hugepages) {
        /* From the block's first page boundary to its end, as numpy's alloc.c does: the
         * kernel rounds the length up to the page the block ends in (advice only, harmless
         * for a neighbour sharing it; stopping a page short would split the mapping in
         * three, a few us more per 64 MiB calloc + free). Errors (old kernels) are
         * ignored, as numpy does. */
        uintptr_t start = ((uintptr_t)base + page_size - 1) & ~(uintptr_t)(page_size - 1);
        uintptr_t end = (uintptr_t)base + total;
        if (end > start) {
            (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
        }
    }
#else
    (void)base;
    (void)total;
    (void)size;
#endif
}

/* The first 64-byte boundary strictly after base; the byte before it records the offset. */
static void *
place(char *base)
{
    size_t offset = ALIGNMENT - (size_t)((uintptr_t)base % ALIGNMENT); /* 1..64 */
    unsigned char *p = (unsigned char *)base + offset;
    p[-1] = (unsigned char)offset;
    return p;
}

static size_t
offset_of(void *ptr)
{
    size_t offset = ((unsigned char *)ptr)[-1];
    if (offset == 0 || offset > ALIGNMENT) {
        /* not a block of ours (or the heap is corrupt): freeing a guess would corrupt it */
        Py_FatalError("interop_core aligned allocator: a pointer it did not allocate");
    }
    return offset;
}

static void *
aligned_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size > SIZE_MAX - ALIGNMENT) {
        return NULL;
    }
    char *base = malloc(size + ALIGNMENT);
    if (base == NULL) {
        return NULL;
    }
    advise(base, size + ALIGNMENT, size);
    return place(base);
}

static void *
aligned_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    if (elsize != 0 && nelem > (SIZE_MAX - ALIGNMENT) / elsize) {
        return NULL;
    }
    size_t size = nelem * elsize;
    /* calloc, never malloc + memset: large blocks come zeroed from the kernel, untouched
     * until written (np.zeros stays lazy); only the offset byte's page is written here. */
    char *base = calloc(1, size + ALIGNMENT);
    if (base == NULL) {
        return NULL;
    }
    advise(base, size + ALIGNMENT, size);
    return place(base);
}

static void *
aligned_realloc(void *ctx, void *ptr, size_t new_size)
{
    if (ptr == NULL) {
        return aligned_malloc(ctx, new_size);
    }
    if (new_size > SIZE_MAX - ALIGNMENT) {
        return NULL;
    }
    size_t old_offset = offset_of(ptr);
    char *base = realloc((char *)ptr - old_offset, new_size + ALIGNMENT);
    if (base == NULL) {
        return NULL; /* the old block stays valid, as realloc's contract says */
    }
    size_t offset = ALIGNMENT - (size_t)((uintptr_t)base % ALIGNMENT);
    if (offset != old_offset) {
        /* Both offsets are <= 64 and the block holds new_size + 64 bytes, so both ranges lie
         * inside it; realloc kept the first min(old, new) + old_offset bytes. */
        memmove(base + offset, base + old_offset, new_size);
    }
    return place(base);
}

static void
aligned_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    if (ptr != NULL) {
        free((char *)ptr - offset_of(ptr));
    }
}

static DataMemHandler handler = {
    "interop_core_aligned64",
    1,
    {NULL, aligned_malloc, aligned_calloc, aligned_realloc, aligned_free},
};

/* -- numpy's C-API table ------------------------------------------------------------ */

typedef PyObject *(*set_handler_fn)(PyObject *);
typedef PyObject *(*get_handler_fn)(void);

static set_handler_fn numpy_set_handler = NULL;
static get_handler_fn numpy_get_handler = NULL;
/* Our handler's capsule: one object, so `get_handler() is handler()` tells it is current. */
static PyObject *handler_capsule = NULL;

static void **
api_table(void)
{
    PyObject *mod = PyImport_ImportModule("numpy._core._multiarray_umath");
    if (mod == NULL && PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
        PyErr_Clear();
        mod = PyImport_ImportModule("numpy.core._multiarray_umath"); /* numpy 1.x */
    }
    if (mod == NULL) {
        return NULL;
    }
    PyObject *capsule = PyObject_GetAttrString(mod, "_ARRAY_API");
    Py_DECREF(mod);
    if (capsule == NULL) {
        return NULL;
    }
    void **table = NULL;
    if (PyCapsule_CheckExact(capsule)) {
        table = (void **)PyCapsule_GetPointer(capsule, NULL);
    }
    else {
        PyErr_SetString(PyExc_RuntimeError, "numpy's _ARRAY_API is not a capsule");
    }
    /* numpy's module (which holds the capsule) is never unloaded: the table outlives it */
    Py_DECREF(capsule);
    return table;
}

static int
valid_handler(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
        return 0;
    }
    DataMemHandler *h = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    return h != NULL && h->version == 1 && memchr(h->name, 0, sizeof h->name) != NULL;
}

/* Fill numpy_set_handler / numpy_get_handler once; 0 on success, -1 with an exception. */
static int
load_numpy(void)
{
    if (numpy_set_handler != NULL) {
        return 0;
    }
    void **table = api_table();
    if (table == NULL) {
        return -1;
    }
    unsigned int (*feature_version)(void) = (unsigned int (*)(void))table[SLOT_FEATURE_VERSION];
    unsigned int feature = feature_version();
    if (feature < FEATURE_1_22) {
        PyErr_Format(PyExc_RuntimeError,
                     "numpy's C API (feature version 0x%x) predates NEP 49 data-memory "
                     "handlers (numpy 1.22, 0x%x)",
                     feature, FEATURE_1_22);
        return -1;
    }
    get_handler_fn get = (get_handler_fn)table[SLOT_GET_HANDLER];
    PyObject *current = get();
    if (current == NULL) {
        return -1;
    }
    int ok = valid_handler(current);
    Py_DECREF(current);
    if (!ok) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numpy's PyDataMem_GetHandler (C-API slot 305) did not return a "
                        "'mem_handler' capsule of a version 1 handler: this numpy's C API "
                        "differs from the one this module was written for");
        return -1;
    }
    numpy_get_handler = get;
    numpy_set_handler = (set_handler_fn)table[SLOT_SET_HANDLER];
    return 0;
}

/* -- module functions ------------------------------------------------------------------ */

static PyObject *
mod_handler(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_NewRef(handler_capsule);
}

static PyObject *
mod_get_handler(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (load_numpy() < 0) {
        return NULL;
    }
    return numpy_get_handler();
}

static PyObject *
set_handler(PyObject *capsule)
{
    if (load_numpy() < 0) {
        return NULL;
    }
    if (capsule != NULL && !valid_handler(capsule)) {
        PyErr_SetString(PyExc_ValueError,
                        "expected a 'mem_handler' capsule holding a version 1 handler");
        return NULL;
    }
    return numpy_set_handler(capsule); /* NULL: numpy's default handler */
}

static PyObject *
mod_set_handler(PyObject *self, PyObject *capsule)
{
    (void)self;
    return set_handler(capsule == Py_None ? NULL : capsule);
}

static PyObject *
mod_enable(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return set_handler(handler_capsule);
}

static PyObject *
mod_set_hugepage(PyObject *self, PyObject *flag)
{
    (void)self;
    int on = PyObject_IsTrue(flag);
    if (on < 0) {
        return NULL;
    }
    int was = advise_hugepages;
    advise_hugepages = on;
    return PyBool_FromLong(was);
}

static PyMethodDef methods[] = {
    {"handler", mod_handler, METH_NOARGS,
     "handler() -> capsule\n\nThis module's 64-byte aligned handler ('mem_handler' capsule)."},
    {"get_handler", mod_get_handler, METH_NOARGS,
     "get_handler() -> capsule\n\nnumpy's current handler in this context."},
    {"set_handler", mod_set_handler, METH_O,
     "set_handler(capsule | None) -> capsule\n\nMake ``capsule`` (None: numpy's default) "
     "numpy's handler in this context; returns the one it replaced."},
    {"enable", mod_enable, METH_NOARGS,
     "enable() -> capsule\n\nset_handler(handler()): returns the handler it replaced."},
    {"set_hugepage", mod_set_hugepage, METH_O,
     "set_hugepage(flag) -> bool\n\nWhether blocks of 4 MiB and more get "
     "madvise(MADV_HUGEPAGE); returns the previous setting."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_aligned_alloc",
    "A NEP 49 numpy data-memory handler whose allocations start on 64-byte boundaries.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__aligned_alloc(void)
{
#ifdef __linux__
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && (page & (page - 1)) == 0) {
        page_size = (size_t)page;
    }
#endif
    if (handler_capsule == NULL) {
        /* static: arrays hold the capsule and free through it until the process ends */
        handler_capsule = PyCapsule_New(&handler, CAPSULE_NAME, NULL);
        if (handler_capsule == NULL) {
            return NULL;
        }
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ALIGNMENT", ALIGNMENT) < 0 ||
        PyModule_AddStringConstant(m, "NAME", handler.name) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
