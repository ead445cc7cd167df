/*
 * to()'s warm path in C (optional: without a compiler face/api.py's Python to() runs).
 *
 * ``Warm(python_to, current, namespace)`` is a callable that does what the first lines of
 * the Python to() do, without a Python frame: for ``to(obj, target)`` with no keyword it
 * finds the registry in use (the ContextVar ``current``, else ``namespace["_default"]``),
 * its state's plan cache ``state.plain[target][type(obj)] -> (key, runners, ...)``, calls
 * ``key(obj)``, looks the key up in ``runners`` and calls the runner on ``obj``. A runner
 * that raises an Exception goes to ``state.warm_failed(obj, target, exc)``, as in Python.
 * Anything else (keywords, no registry yet, a target or type not planned, a key that
 * raises or is not planned) calls ``python_to`` with the same arguments: the Python path
 * decides and reports, so both paths give the same results and errors.
 *
 * It reads the plan cache the Python code writes and never writes it: the planner, the
 * keys and the runners stay the plugins' and the engine's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python_to;
    PyObject *current;
    PyObject *namespace;
    PyObject *dict; /* __doc__, __wrapped__, autograph_info__, ... (functools.update_wrapper) */
} Warm;

static PyObject *str_default, *str_state, *str_plain, *str_warm_failed;

static PyObject *
slow(Warm *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->python_to, args, nargsf, kwnames);
}

/* The registry's state in use here (new reference), or NULL without an exception. */
static PyObject *
current_state(Warm *self)
{
    PyObject *reg = NULL;
    if (PyContextVar_Get(self->current, Py_None, &reg) < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (reg == Py_None) {
        Py_DECREF(reg);
        reg = PyDict_GetItemWithError(self->namespace, str_default); /* borrowed */
        if (reg == NULL || reg == Py_None) {
            PyErr_Clear();
            return NULL;
        }
        Py_INCREF(reg);
    }
    PyObject *state = PyObject_GetAttr(reg, str_state);
    Py_DECREF(reg);
    if (state == NULL) {
        PyErr_Clear();
    }
    return state;
}

/* The runner planned for (obj, target) in state (new reference), or NULL without an
 * exception when there is none the warm path can use. */
static PyObject *
planned_runner(PyObject *state, PyObject *obj, PyObject *target)
{
    PyObject *plain = PyObject_GetAttr(state, str_plain);
    if (plain == NULL || !PyDict_Check(plain)) {
        Py_XDECREF(plain);
        PyErr_Clear();
        return NULL;
    }
    PyObject *by_type = PyDict_GetItemWithError(plain, target); /* borrowed */
    PyObject *entry = NULL, *run = NULL;
    if (by_type != NULL && PyDict_Check(by_type)) {
        entry = PyDict_GetItemWithError(by_type, (PyObject *)Py_TYPE(obj));
    }
    if (entry != NULL && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) >= 2 &&
        PyDict_Check(PyTuple_GET_ITEM(entry, 1))) {
        Py_INCREF(entry); /* the key function may run Python code that replaces it */
        PyObject *key = PyObject_CallOneArg(PyTuple_GET_ITEM(entry, 0), obj);
        if (key != NULL) {
            run = PyDict_GetItemWithError(PyTuple_GET_ITEM(entry, 1), key);
            Py_XINCREF(run);
            Py_DECREF(key);
        }
        Py_DECREF(entry);
    }
    Py_DECREF(plain);
    if (run == NULL) {
        PyErr_Clear(); /* an unhashable target, a key that raised: the Python path reports */
    }
    return run;
}

static PyObject *
warm_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Warm *self = (Warm *)op;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        return slow(self, args, nargsf, kwnames);
    }
    PyObject *state = current_state(self);
    if (state == NULL) {
        return slow(self, args, nargsf, kwnames);
    }
    PyObject *obj = args[0], *target = args[1];
    PyObject *run = planned_runner(state, obj, target);
    if (run == NULL) {
        Py_DECREF(state);
        return slow(self, args, nargsf, kwnames);
    }
    PyObject *result = PyObject_CallOneArg(run, obj);
    Py_DECREF(run);
    if (result == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
        /* the failed step is handled, never run again (State.warm_failed) */
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb != NULL) {
            PyException_SetTraceback(exc, tb);
        }
        Py_XDECREF(type);
        Py_XDECREF(tb);
        PyObject *call[4] = {state, obj, target, exc};
        result = PyObject_VectorcallMethod(str_warm_failed, call,
                                           4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(exc);
    }
    Py_DECREF(state);
    return result;
}

static PyObject *
warm_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs)
{
    PyObject *python_to, *current, *namespace;
    if (!PyArg_ParseTuple(args, "OO!O!:Warm", &python_to, &PyContextVar_Type, &current,
                          &PyDict_Type, &namespace)) {
        return NULL;
    }
    if (!PyCallable_Check(python_to)) {
        PyErr_SetString(PyExc_TypeError, "Warm(python_to, current, namespace): python_to must be callable");
        return NULL;
    }
    Warm *self = (Warm *)cls->tp_alloc(cls, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = warm_vectorcall;
    self->python_to = Py_NewRef(python_to);
    self->current = Py_NewRef(current);
    self->namespace = Py_NewRef(namespace);
    return (PyObject *)self;
}

static int
warm_traverse(Warm *self, visitproc visit, void *arg)
{
    Py_VISIT(self->python_to);
    Py_VISIT(self->current);
    Py_VISIT(self->namespace);
    Py_VISIT(self->dict);
    return 0;
}

static int
warm_clear(Warm *self)
{
    Py_CLEAR(self->python_to);
    Py_CLEAR(self->current);
    Py_CLEAR(self->namespace);
    Py_CLEAR(self->dict);
    return 0;
}

static void
warm_dealloc(Warm *self)
{
    PyObject_GC_UnTrack(self);
    warm_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A method of a class, as the Python function would be (binding obj to self). */
static PyObject *
warm_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

static PyObject *
warm_python(Warm *self, void *closure)
{
    return Py_NewRef(self->python_to);
}

static PyGetSetDef warm_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"python", (getter)warm_python, NULL, "The Python to() this calls off the warm path.", NULL},
    {NULL},
};

static PyObject *
warm_repr(Warm *self)
{
    return PyUnicode_FromFormat("<function to (warm path in C) of %R>", self->python_to);
}

static PyTypeObject WarmType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "interop_core._warm.Warm",
    .tp_doc = "to() with its warm path in C; everything else is the Python to()'s.",
    .tp_basicsize = sizeof(Warm),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Warm, vectorcall),
    .tp_dictoffset = offsetof(Warm, dict),
    .tp_call = PyVectorcall_Call,
    .tp_new = warm_new,
    .tp_traverse = (traverseproc)warm_traverse,
    .tp_clear = (inquiry)warm_clear,
    .tp_dealloc = (destructor)warm_dealloc,
    .tp_descr_get = warm_get,
    .tp_getset = warm_getset,
    .tp_repr = (reprfunc)warm_repr,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_warm", "to()'s warm path in C.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__warm(void)
{
    str_default = PyUnicode_InternFromString("_default");
    str_state = PyUnicode_InternFromString("state");
    str_plain = PyUnicode_InternFromString("plain");
    str_warm_failed = PyUnicode_InternFromString("warm_failed");
    if (!str_default || !str_state || !str_plain || !str_warm_failed) {
        return NULL;
    }
    if (PyType_Ready(&WarmType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Warm", (PyObject *)&WarmType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
