// RAII for HDF5 identifiers (files, datasets, dataspaces, property lists, attributes, types):
// each handle closes itself with the matching H5?close.
#pragma once

#include <hdf5.h>

#include <utility>

namespace st {

class Hdf5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Hdf5Handle() = default;
  Hdf5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Hdf5Handle() { reset(); }
  Hdf5Handle(Hdf5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

inline Hdf5Handle hdf5_file(hid_t id) { return {id, H5Fclose}; }
inline Hdf5Handle hdf5_dataset(hid_t id) { return {id, H5Dclose}; }
inline Hdf5Handle hdf5_space(hid_t id) { return {id, H5Sclose}; }
inline Hdf5Handle hdf5_plist(hid_t id) { return {id, H5Pclose}; }
inline Hdf5Handle hdf5_attribute(hid_t id) { return {id, H5Aclose}; }
inline Hdf5Handle hdf5_type(hid_t id) { return {id, H5Tclose}; }

}  // namespace st
