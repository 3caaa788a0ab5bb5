// A streamed message for ScheduleError: `throw ScheduleError(Msg() << "bad iter " << i);`.
#pragma once

#include <sstream>
#include <string>

#include "tessera/support/error.h"

namespace tessera::sched {

class Msg {
  public:
    template <typename T> Msg& operator<<(const T& x) {
        os_ << x;
        return *this;
    }
    operator std::string() const { return os_.str(); }

  private:
    std::ostringstream os_;
};

} // namespace tessera::sched
