// The one translation unit that compiles Boost.Asio's and Boost.Beast's definitions
// (separate compilation): everything else includes their declarations only.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
