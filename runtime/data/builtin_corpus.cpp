#include "runtime/data/builtin_corpus.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowband::data {

namespace {

constexpr size_t kCorpusBytes = 400 * 1000;
constexpr uint64_t kCorpusSeed = 0x6C6F7762616E64ull;  // "lowband"

// splitmix64; own generator so the text is the same with any standard library.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }  // bias < 1e-15: irrelevant here
  template <typename T>
  const T& pick(const std::vector<T>& items) { return items[below(items.size())]; }
};

struct Person {
  std::string name, subject, object, possessive;  // "Anna", "she", "her", "her"
};

const std::vector<Person> kPeople = {
    {"Anna", "she", "her", "her"},   {"Tom", "he", "him", "his"},      {"Mara", "she", "her", "her"},
    {"Peter", "he", "him", "his"},   {"Lucy", "she", "her", "her"},    {"Jonas", "he", "him", "his"},
    {"Elena", "she", "her", "her"},  {"Hugo", "he", "him", "his"},     {"Rosa", "she", "her", "her"},
    {"Felix", "he", "him", "his"},   {"the miller", "he", "him", "his"}, {"the old weaver", "she", "her", "her"},
};
const std::vector<std::string> kPlaces = {"the river", "the market", "the mill", "the forest", "the harbour",
                                          "the hill", "the bakery", "the old bridge", "the garden", "the church",
                                          "the school", "the station"};
const std::vector<std::string> kTimes = {"morning", "evening", "afternoon", "night"};
const std::vector<std::string> kObjects = {"a basket of apples", "a lantern", "a letter", "a loaf of bread",
                                           "a small box", "a red umbrella", "a bundle of wood", "a jar of honey",
                                           "a map", "a sack of flour"};
const std::vector<std::string> kCountable = {"apples", "coins", "eggs", "candles", "books", "stones", "fish", "cups"};
const std::vector<std::string> kNumbers = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                                           "twelve"};
const std::vector<std::string> kWeather = {"The wind blew cold over", "A soft rain fell on", "The sun shone warm on",
                                           "A grey fog lay over", "Snow covered"};
const std::vector<std::string> kFeelings = {"happy", "tired", "worried", "surprised", "hungry", "glad"};
const std::vector<std::string> kGreetings = {"Good morning", "Hello", "Good evening", "Well met"};
const std::vector<std::string> kReasons = {"My mother needs it before dark.", "The baker asked me to bring it.",
                                           "I promised it to a friend.", "It is for the winter.",
                                           "I want to sell it at the market."};
const std::vector<std::string> kEndings = {"went home", "sat down by the fire", "went to sleep early",
                                           "wrote it all down in a book", "told the story to everyone"};

std::string capitalised(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

// One story: two people, one place, one object, told in a fixed arc of
// templates whose slots agree with each other.
void append_story(Rng& rng, std::string& out) {
  const Person& a = rng.pick(kPeople);
  const Person* b = &rng.pick(kPeople);
  while (b == &a) b = &rng.pick(kPeople);
  const std::string& place = rng.pick(kPlaces);
  const std::string& object = rng.pick(kObjects);
  const std::string& time = rng.pick(kTimes);
  const std::string A = capitalised(a.name), B = capitalised(b->name);

  out += "In the " + time + ", " + a.name + " walked to " + place + ". ";
  out += rng.pick(kWeather) + " " + place + ". ";
  out += "There " + a.subject + " met " + b->name + ", who was carrying " + object + ". ";
  out += "\"" + rng.pick(kGreetings) + ", " + B + ",\" said " + a.name + ". \"Where are you going with " +
         object + "?\"\n";
  out += "\"" + capitalised(rng.pick(kPlaces)) + ",\" " + b->subject + " answered. \"" + rng.pick(kReasons) + "\"\n";
  if (rng.below(2) == 0) {
    const std::string& count = rng.pick(kNumbers);
    const std::string& things = rng.pick(kCountable);
    out += A + " gave " + b->object + " " + count + " " + things + ", and " + b->subject + " put them in " +
           b->possessive + " bag. ";
  } else {
    out += capitalised(b->subject) + " was " + rng.pick(kFeelings) + ", so " + a.subject + " walked with " +
           b->object + " as far as " + rng.pick(kPlaces) + ". ";
  }
  out += "Then " + a.name + " " + rng.pick(kEndings) + ", and " + b->name + " " + rng.pick(kEndings) + ".\n\n";
}

}  // namespace

std::string builtin_corpus() {
  Rng rng{kCorpusSeed};
  std::string text;
  text.reserve(kCorpusBytes + 1000);
  int chapter = 1;
  while (text.size() < kCorpusBytes) {
    text += "CHAPTER " + std::to_string(chapter++) + "\n\n";
    const size_t stories = 3 + rng.below(4);
    for (size_t i = 0; i < stories; ++i) append_story(rng, text);
  }
  return text;
}

}  // namespace lowband::data
