// The one smart pointer of the IR: an intrusive, atomic reference count (Halide style).
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

namespace tessera {

/// Base of every refcounted object. Copying an object does not copy its count.
class RefCounted {
public:
    RefCounted() = default;
    RefCounted(const RefCounted&) : ref_count_(0) {}
    RefCounted& operator=(const RefCounted&) { return *this; }
    virtual ~RefCounted() = default;

    void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
    /// Returns true when the last reference went away.
    bool dec_ref() const { return ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
    int use_count() const { return ref_count_.load(std::memory_order_relaxed); }

private:
    mutable std::atomic<int> ref_count_{0};
};

/// Shared handle to a RefCounted T. Null by default. Thread-safe counting; the pointee is
/// treated as immutable once shared.
template <typename T> class IntrusivePtr {
public:
    IntrusivePtr() = default;
    IntrusivePtr(std::nullptr_t) {}
    explicit IntrusivePtr(T* p) : ptr_(p) {
        if (ptr_) ptr_->inc_ref();
    }
    IntrusivePtr(const IntrusivePtr& o) : ptr_(o.ptr_) {
        if (ptr_) ptr_->inc_ref();
    }
    IntrusivePtr(IntrusivePtr&& o) noexcept : ptr_(o.ptr_) { o.ptr_ = nullptr; }
    template <typename U> IntrusivePtr(const IntrusivePtr<U>& o) : ptr_(o.get()) {
        if (ptr_) ptr_->inc_ref();
    }
    ~IntrusivePtr() { reset(); }
    IntrusivePtr& operator=(IntrusivePtr o) noexcept {
        std::swap(ptr_, o.ptr_);
        return *this;
    }
    void reset() {
        if (ptr_ && ptr_->dec_ref()) delete ptr_;
        ptr_ = nullptr;
    }
    T* get() const { return ptr_; }
    T* operator->() const { return ptr_; }
    T& operator*() const { return *ptr_; }
    bool defined() const { return ptr_ != nullptr; }
    explicit operator bool() const { return ptr_ != nullptr; }
    /// Identity comparison (not structural).
    bool same_as(const IntrusivePtr& o) const { return ptr_ == o.ptr_; }

private:
    T* ptr_ = nullptr;
};

} // namespace tessera
