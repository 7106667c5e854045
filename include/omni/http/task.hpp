// Task<T>: the coroutine type of Omni's I/O code (an Asio awaitable).
#pragma once

#include <boost/asio/awaitable.hpp>

namespace omni {

template <class T = void>
using Task = boost::asio::awaitable<T>;

}  // namespace omni
