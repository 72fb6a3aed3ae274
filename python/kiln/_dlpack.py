"""ctypes mirrors of the DLPack structs and the PyCapsule calls the runtime wrapper needs.

Two layouts are described here:

* the unversioned ``DLManagedTensor`` (DLPack 0.6, capsule name ``"dltensor"``), which is
  what the Kiln C API takes and returns (``kiln_tensor_from_dlpack`` / ``kiln_tensor_to_dlpack``);
* the versioned ``DLManagedTensorVersioned`` (DLPack >= 1.0, capsule ``"dltensor_versioned"``),
  used only when handing outputs to a consumer that asks for it: numpy marks arrays imported from
  an unversioned capsule read-only (there is no flag saying otherwise), while a versioned capsule
  without the READ_ONLY flag gives a writable array.

Nothing here imports numpy or torch.
"""

from __future__ import annotations

import ctypes

# Device codes (DLDeviceType).
KDL_CPU = 1
KDL_CUDA = 2

# Capsule names fixed by the DLPack Python protocol.
CAPSULE_NAME = b"dltensor"
USED_CAPSULE_NAME = b"used_dltensor"
VERSIONED_CAPSULE_NAME = b"dltensor_versioned"
USED_VERSIONED_CAPSULE_NAME = b"used_dltensor_versioned"

# The DLPack version whose versioned layout is described below.
DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 0


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensorDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorDeleter),
]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersionedDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorVersionedDeleter),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

# ---- PyCapsule API ---------------------------------------------------------------
# Capsule pointers are passed as c_void_p (not py_object) in the destructor path:
# a destructor runs while the capsule's refcount is already 0, and wrapping it in
# a py_object would incref/decref it and free it a second time.

_pythonapi = ctypes.pythonapi
_PyCapsule_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_pythonapi.PyCapsule_New.restype = ctypes.py_object
_pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _PyCapsule_Destructor]
_pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pythonapi.PyCapsule_SetName.restype = ctypes.c_int
_pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
_pythonapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]

_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _pythonapi)
)
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _pythonapi)
)


def capsule_pointer(capsule: object, name: bytes) -> int:
    """The pointer inside ``capsule`` if it has the name ``name`` (raises ValueError otherwise)."""
    if not _pythonapi.PyCapsule_IsValid(capsule, name):
        raise ValueError(f"expected a DLPack capsule named {name.decode()!r} (already consumed?)")
    return _pythonapi.PyCapsule_GetPointer(capsule, name)


def mark_capsule_used(capsule: object, used_name: bytes) -> None:
    """Renames a consumed capsule so its destructor no longer frees the tensor (DLPack protocol)."""
    if _pythonapi.PyCapsule_SetName(capsule, used_name) != 0:
        raise RuntimeError("PyCapsule_SetName failed")


def call_deleter(address: int) -> None:
    """Runs the deleter of the unversioned DLManagedTensor at ``address`` (if it has one)."""
    managed = ctypes.cast(address, ctypes.POINTER(DLManagedTensor))
    if managed.contents.deleter:
        managed.contents.deleter(managed)


@_PyCapsule_Destructor
def _unversioned_capsule_destructor(capsule_address):
    # Only a capsule nobody consumed still has the original name.
    if _raw_is_valid(capsule_address, CAPSULE_NAME):
        call_deleter(_raw_get_pointer(capsule_address, CAPSULE_NAME))


def new_unversioned_capsule(managed_address: int) -> object:
    """A "dltensor" capsule owning the DLManagedTensor at ``managed_address``."""
    return _pythonapi.PyCapsule_New(managed_address, CAPSULE_NAME, _unversioned_capsule_destructor)


# ---- versioned capsules ------------------------------------------------------------------
# The DLManagedTensorVersioned comes from Kiln's C API (kiln_dlpack_to_versioned), deleter
# included: a capsule nobody consumed runs that deleter when it is destroyed.


@_PyCapsule_Destructor
def _versioned_capsule_destructor(capsule_address):
    if _raw_is_valid(capsule_address, VERSIONED_CAPSULE_NAME):
        address = _raw_get_pointer(capsule_address, VERSIONED_CAPSULE_NAME)
        managed = ctypes.cast(address, ctypes.POINTER(DLManagedTensorVersioned))
        if managed.contents.deleter:
            managed.contents.deleter(managed)


def new_versioned_capsule(versioned_address: int) -> object:
    """A "dltensor_versioned" capsule owning the DLManagedTensorVersioned at ``versioned_address``."""
    return _pythonapi.PyCapsule_New(versioned_address, VERSIONED_CAPSULE_NAME, _versioned_capsule_destructor)
