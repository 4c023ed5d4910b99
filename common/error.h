#pragma once
// The one error type for bad input. Its message names the place: a JSON path
// ("network.bandwidth"), a file and line, or a flag. The CLI prints it on one
// line and exits with status 2.
#include <stdexcept>
#include <string>

namespace lowband {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& place, const std::string& what)
      : std::runtime_error(place.empty() ? what : place + ": " + what), place_(place) {}
  const std::string& place() const { return place_; }

 private:
  std::string place_;
};

}  // namespace lowband
